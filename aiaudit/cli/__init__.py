"""Command line: the ``aiaudit`` commands, their exit codes and the one error boundary
(:func:`main`).  No audit logic here.

One module per command (:mod:`~aiaudit.cli.scan`, :mod:`~aiaudit.cli.rules` for ``rules``,
``explain`` and ``validate``, :mod:`~aiaudit.cli.reports` for ``render`` and ``remediate``,
:mod:`~aiaudit.cli.fleet`, :mod:`~aiaudit.cli.sshd`), the options they share
(:mod:`~aiaudit.cli.options`) and how output is written (:mod:`~aiaudit.cli.output`:
atomic files, stdout, the report deadline)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any, Callable, NoReturn, Sequence

from aiaudit import __version__
from aiaudit.cli.options import EXIT_CODES_HELP, Parser, RawFormatter
from aiaudit.cli.output import (
    ReportDeadline,
    error,
    occupy_closed_std_fds,
    silence_stdout,
    to_stderr,
    write_stdout,
)
from aiaudit.core.errors import AuditError, ExitCode, RulesetError
from aiaudit.core.startup.collector import loading, own_process

_SUBCOMMANDS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "scan": ("scan", "populate_scan", "cmd_scan", {
        "help": "scan the host or a root filesystem", "formatter_class": RawFormatter}),
    "rules": ("rules", "populate_rules", "cmd_rules", {
        "help": "list the rules of a ruleset: id, severity, expected value, title"}),
    "explain": ("rules", "populate_explain", "cmd_explain", {
        "help": "explain a rule: rationale, references, fix"}),
    "validate": ("rules", "populate_validate", "cmd_validate", {
        "help": "validate a ruleset file and report every problem"}),
    "render": ("reports", "populate_render", "cmd_render", {
        "help": "re-render a saved JSON report in another format",
        "description": "Read a report written by `aiaudit scan -o json:FILE` (validated "
                       "against schemas/report.schema.json) and render it again."}),
    "remediate": ("reports", "populate_remediate", "cmd_remediate", {
        "help": "write a fix bundle (files, install.sh, playbook) from a saved JSON report",
        "description": "Write the drop-in files, an install.sh and an Ansible playbook that "
                       "fix the failures of a saved scan.  aiaudit itself changes nothing on "
                       "the host."}),
    "fleet": ("fleet", "populate_fleet", "cmd_fleet", {
        "help": "aggregate many nodes' reports: per-rule host lists, drift, identity",
        "description": "Read saved JSON reports and event streams of many nodes (reports\n"
                       "of different aiaudit versions or rulesets are grouped, not mixed)\n"
                       "and report per rule which nodes fail, values that differ from the\n"
                       "majority, cloned machine ids and, with --since, what changed.",
        "formatter_class": RawFormatter}),
    "sshd": ("sshd", "populate", "cmd", {
        "help": "print the effective sshd configuration for a connection (like sshd -T -C)",
        "description": "The scanned root's effective sshd configuration as `sshd -T` prints "
                       "it, for the connection given with --connection (Match blocks "
                       "evaluated as sshd does); read-only, nothing is executed."}),
    "baseline": ("baseline", "populate", "cmd", {
        "help": "write a node class: a ruleset pinning a known-good node's hardware and stack",
        "description": "Read a known-good node (or a fleet's saved reports) and write a "
                       "ruleset that extends dl-training and pins its facts (GPUs, PCIe "
                       "links, VBIOS, HCAs, memory, CPUs, kernel, driver, packages); "
                       "`aiaudit scan --ruleset CLASS.yaml` holds another node to it."}),
}
"""Each subcommand: its module under ``aiaudit.cli``, the functions there that add its
arguments and run it, and its ``add_parser`` keywords.  A command's module is imported only
when that command runs (a Slurm prolog imports the scan's, not the fleet's)."""

COMMANDS = tuple(_SUBCOMMANDS)


def _command(name: str, which: int) -> Callable[..., Any]:
    """The populate (``which`` 1) or run (2) function of command ``name``."""
    import importlib

    spec = _SUBCOMMANDS[name]
    module = importlib.import_module(f"aiaudit.cli.{spec[0]}")
    function: Callable[..., Any] = getattr(module, str(spec[which]))
    return function


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``aiaudit`` argument parser; with ``command``, only that subcommand is built
    (with ``None``, every one): a scan should not pay for building the parsers and
    options, nor import the modules, of commands it does not run."""
    p = Parser(
        prog="aiaudit",
        description="Read-only audit of a Linux host (or a mounted root filesystem) for "
                    "deep-learning training: kernel tuning, limits, SSH, network, GPU stack.",
        epilog=EXIT_CODES_HELP,
        formatter_class=RawFormatter,
    )
    p.add_argument("--version", action="version", version=f"aiaudit {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, (_module, _populate, _run, kwargs) in _SUBCOMMANDS.items():
        if command is None or command == name:
            _command(name, 1)(sub.add_parser(name, **kwargs))
    return p


def run() -> NoReturn:
    """Console entry point (``aiaudit``, ``python -m aiaudit``): :func:`main`, then exit
    without finalizing the interpreter.

    Tearing down the ~200 modules a scan loads costs a prolog scan 28 M instructions (8%;
    :mod:`aiaudit.core.startup` lists this with the other start-up pieces).  There is
    nothing to clean up by then: reports are written and closed by :func:`main`, aiaudit
    registers no ``atexit`` handler, and the rule worker is a daemon thread.  So stdout and
    stderr are flushed and the process leaves with ``os._exit`` (a ``SystemExit`` from
    argparse, ``--help`` or ``--version`` exits the
    ordinary way).  The process is aiaudit's own, so a scan's loading may hold off the
    garbage collector (:mod:`aiaudit.core.startup.collector`).
    """
    own_process()
    code = main()
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe, a full disk (reported already) or a closed fd: nothing to add
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; the one error boundary of aiaudit.  Returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    occupy_closed_std_fds()
    for i, arg in enumerate(argv):  # only through the API: a C argv cannot hold one
        if "\0" in arg:
            error(f"argument {i + 1} ({arg[:40]!r}): a NUL byte at character "
                  f"{arg.index(chr(0)) + 1}")
            return ExitCode.USAGE
    # the top level has no option that takes a value: the first word names the command
    word = next((a for a in argv if not a.startswith("-")), None)
    with loading():  # the command's modules: no cyclic collection (core.startup.collector)
        parser = build_parser(word if word in COMMANDS else None)
        args = parser.parse_args(argv)
    if not args.command:
        if sys.stderr is not None:  # (print_help(None) would write to stdout)
            parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        code = int(_command(args.command, 2)(args))
        if args.command not in ("scan", "render"):  # their reports flushed already
            write_stdout("")
        return code
    except ReportDeadline:  # the timer fired just as the reports were finished
        error("the reports were not finished by the deadline")
        return ExitCode.USAGE
    except RulesetError as exc:
        for problem in exc.problems:
            error(problem)
        return ExitCode.USAGE
    except AuditError as exc:
        error(str(exc))
        return ExitCode.USAGE
    except BrokenPipeError:  # print() of rules/explain into a closed pipe
        silence_stdout()
        error("cannot write to stdout: Broken pipe")
        return ExitCode.USAGE
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except Exception as exc:
        if getattr(args, "debug", False):
            raise
        to_stderr(f"aiaudit: internal error: {type(exc).__name__}: {exc} "
                  "(run with --debug for a traceback)")
        return ExitCode.INTERNAL
