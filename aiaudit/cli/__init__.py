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
from aiaudit.cli.fleet import FLEET_EXIT_HELP, cmd_fleet, populate_fleet
from aiaudit.cli.options import EXIT_CODES_HELP, Parser, RawFormatter
from aiaudit.cli.output import (
    ReportDeadline,
    error,
    occupy_closed_std_fds,
    silence_stdout,
    write_stdout,
)
from aiaudit.cli.reports import cmd_remediate, cmd_render, populate_remediate, populate_render
from aiaudit.cli.rules import (
    cmd_explain,
    cmd_rules,
    cmd_validate,
    populate_explain,
    populate_rules,
    populate_validate,
)
from aiaudit.cli.scan import MODES_HELP, cmd_scan, populate_scan
from aiaudit.core.errors import AuditError, ExitCode, RulesetError


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``aiaudit`` argument parser; with ``command``, only that subcommand gets its
    arguments (the others are listed with their help line): a scan should not pay for
    building the options of five commands it does not run."""
    p = Parser(
        prog="aiaudit",
        description="Read-only audit of a Linux host (or a mounted root filesystem) for "
                    "deep-learning training: kernel tuning, limits, SSH, network, GPU stack.",
        epilog=EXIT_CODES_HELP,
        formatter_class=RawFormatter,
    )
    p.add_argument("--version", action="version", version=f"aiaudit {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, (populate, kwargs) in _SUBCOMMANDS.items():
        sp = sub.add_parser(name, **kwargs)
        if command is None or command == name:
            populate(sp)
    return p


def _populate_sshd(p: argparse.ArgumentParser) -> None:
    from aiaudit.cli import sshd as sshd_view

    sshd_view.populate(p)


def cmd_sshd(args: argparse.Namespace) -> int:
    """``aiaudit sshd [--connection SPEC]`` (:mod:`aiaudit.cli.sshd`)."""
    from aiaudit.cli import sshd as sshd_view

    return sshd_view.cmd(args)


_SUBCOMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], dict[str, Any]]] = {
    "scan": (populate_scan, {"help": "scan the host or a root filesystem",
                              "epilog": EXIT_CODES_HELP + "\n" + MODES_HELP,
                              "formatter_class": RawFormatter}),
    "rules": (populate_rules, {"help": "list the rules of a ruleset: id, severity, "
                                        "expected value, title"}),
    "explain": (populate_explain, {"help": "explain a rule: rationale, references, fix"}),
    "validate": (populate_validate,
                 {"help": "validate a ruleset file and report every problem"}),
    "render": (populate_render, {
        "help": "re-render a saved JSON report in another format",
        "description": "Read a report written by `aiaudit scan -o json:FILE` (validated "
                       "against schemas/report.schema.json) and render it again."}),
    "remediate": (populate_remediate, {
        "help": "write a fix bundle (files, install.sh, playbook) from a saved JSON report",
        "description": "Write the drop-in files, an install.sh and an Ansible playbook that "
                       "fix the failures of a saved scan.  aiaudit itself changes nothing on "
                       "the host."}),
    "fleet": (populate_fleet, {
        "help": "aggregate many nodes' reports: per-rule host lists, drift, identity",
        "description": "Read saved JSON reports and event streams of many nodes (reports\n"
                       "of different aiaudit versions or rulesets are grouped, not mixed)\n"
                       "and report per rule which nodes fail, values that differ from the\n"
                       "majority, cloned machine ids and, with --since, what changed.",
        "epilog": FLEET_EXIT_HELP, "formatter_class": RawFormatter}),
    "sshd": (_populate_sshd, {
        "help": "print the effective sshd configuration for a connection (like sshd -T -C)",
        "description": "The scanned root's effective sshd configuration as `sshd -T` prints "
                       "it, for the connection given with --connection (Match blocks "
                       "evaluated as sshd does); read-only, nothing is executed."}),
}
"""Each subcommand: what adds its arguments, and its ``add_parser`` keywords."""


COMMANDS = {"scan": cmd_scan, "rules": cmd_rules, "explain": cmd_explain,
            "validate": cmd_validate, "render": cmd_render, "remediate": cmd_remediate,
            "fleet": cmd_fleet,
            "sshd": cmd_sshd}


def run() -> NoReturn:
    """Console entry point (``aiaudit``, ``python -m aiaudit``): :func:`main`, then exit
    without finalizing the interpreter.

    Tearing down the ~200 modules a scan loads took 14 ms of a 110 ms scan (a Slurm prolog
    pays it on every job).  There is nothing to clean up by then: reports are written and
    closed by :func:`main`, aiaudit registers no ``atexit`` handler, and the rule worker is a
    daemon thread.  So stdout and stderr are flushed and the process leaves with
    ``os._exit`` (a ``SystemExit`` from argparse, ``--help`` or ``--version`` exits the
    ordinary way).
    """
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
            print(f"aiaudit: error: argument {i + 1} ({arg[:40]!r}): a NUL byte at character "
                  f"{arg.index(chr(0)) + 1}", file=sys.stderr)
            return ExitCode.USAGE
    # the top level has no option that takes a value: the first word names the command
    word = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(word if word in COMMANDS else None)
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        code = int(COMMANDS[args.command](args))
        if args.command not in ("scan", "render"):  # their reports flushed already
            write_stdout("")
        return code
    except ReportDeadline:  # the timer fired just as the reports were finished
        error("the reports were not finished by the deadline")
        return ExitCode.USAGE
    except RulesetError as exc:
        for problem in exc.problems:
            print(f"aiaudit: error: {problem}", file=sys.stderr)
        return ExitCode.USAGE
    except AuditError as exc:
        print(f"aiaudit: error: {exc}", file=sys.stderr)
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
        print(f"aiaudit: internal error: {type(exc).__name__}: {exc} "
              "(run with --debug for a traceback)", file=sys.stderr)
        return ExitCode.INTERNAL
