"""Options several commands share, their defaults, and the argument parser classes."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any, NoReturn, Sequence

from aiaudit.core.errors import ExitCode

EXIT_CODES_HELP = """\
exit codes:
  0  no failed rule at or above --fail-on
  1  at least one rule at or above --fail-on failed
  2  usage, ruleset or input error (one message on stderr, nothing scanned); or a
     report could not be rendered or written (full disk, closed stdout or pipe, a
     reporter plugin that failed, reports not done by the deadline): one message
     per lost report, the other reports are still written.  A --state or --syslog
     failure keeps 1 and 3 (the verdict) and gives 2 otherwise
  3  no failure at or above --fail-on, but a rule at or above it could not be
     evaluated (error result): "could not look", not "bad host"
  4  internal error (a bug in aiaudit: please report it)
  130  interrupted (SIGINT)
"""


DEFAULT_RULESET = "dl-training"


DEFAULT_FAIL_ON = "medium"


DEFAULT_TIMEOUT = 120.0


PROLOG_TIMEOUT = 10.0
"""Default scan deadline with ``--prolog``: a job should not wait long for its node."""


class Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line and exit code 2 (usage)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """The usage line and one message on stderr, exit code 2 (argparse's own exit
        code is 2 too; said here so that it is :attr:`ExitCode.USAGE` by name).  The
        message quotes arguments (``unrecognized arguments: ...``): its control characters
        are escaped, as every stderr line is (:func:`~aiaudit.cli.output.to_stderr`)."""
        from aiaudit.cli.output import to_stderr

        if sys.stderr is not None:  # print_usage(None) would write to stdout
            self.print_usage(sys.stderr)
        to_stderr(f"{self.prog}: error: {message}")
        self.exit(ExitCode.USAGE)

    def _print_message(self, message: str, file: Any = None) -> None:
        """argparse's one writer (``--help``, ``--version``, usage).  What goes to stdout
        goes through :func:`~aiaudit.cli.output.write_stdout`: a full disk, a closed pipe
        or a closed stdout (``file`` is then ``None``) is one message and exit code 2, as
        for a report, not a silent exit 0 (argparse ignores the error)."""
        if message and (file is None or file is sys.stdout):
            from aiaudit.cli.output import OutputError, error, write_stdout

            try:
                write_stdout(message)
            except OutputError as exc:
                error(str(exc))
                raise SystemExit(ExitCode.USAGE) from None
            return
        super()._print_message(message, file)


MAX_SECONDS = 86400.0
"""Longest ``--timeout`` / ``--rule-timeout`` (one day): a larger value is a typo, and
``1e19`` s overflows the interpreter's timeouts (OverflowError in ``thread.join``)."""


def positive_float(text: str) -> float:
    """A number of seconds: finite, > 0 and at most :data:`MAX_SECONDS` (``inf``, ``nan``,
    ``1e19`` and negative values are usage errors)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0:  # also NaN
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    if not v <= MAX_SECONDS:  # also inf
        raise argparse.ArgumentTypeError(f"must be at most {MAX_SECONDS:g} seconds (one day): "
                                         f"{text!r}")
    return v


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, sized as ``shutil.get_terminal_size`` would size it but without
    importing ``shutil`` (argparse builds a formatter for every ``add_argument``, and
    ``shutil`` pulls in bz2, lzma and zlib: 4 ms of every scan's start-up)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width)


class RawFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """:class:`HelpFormatter` that keeps the description and epilog as written."""


def _columns() -> int:
    """Terminal width: ``$COLUMNS``, else the width of stdout's terminal, else 80."""
    with contextlib.suppress(ValueError):
        if int(os.environ.get("COLUMNS", "")) > 0:
            return int(os.environ["COLUMNS"])
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


COMMAND_TIMEOUT = 60.0
"""Default ``--timeout`` of ``rules``, ``explain``, ``validate`` and ``render``: far more
than they need (a second or two), and a bound on a third-party plugin that hangs while it
registers (or a reporter that never returns)."""


def add_timeout(p: argparse.ArgumentParser, what: str) -> None:
    """``--timeout SECONDS`` for a command other than ``scan``: ``what`` says what it
    bounds besides loading the third-party plugins."""
    p.add_argument("--timeout", type=positive_float, default=COMMAND_TIMEOUT,
                   metavar="SECONDS",
                   help=f"deadline for the command: loading third-party plugins and "
                        f"{what}; past it, one message and exit code 2 (default "
                        f"{COMMAND_TIMEOUT:g}; at most {MAX_SECONDS:g})")


def start_deadline(args: argparse.Namespace) -> Any:
    """The command's deadline (``--timeout`` from now), with the plugin registry built
    within it, as ``scan`` does: a third-party plugin whose registration hangs costs the
    deadline, then one message (:func:`aiaudit.core.plugins.registry`).  Returns the
    :class:`~aiaudit.core.host.Deadline`."""
    from aiaudit.core import plugins
    from aiaudit.core.host import Deadline

    deadline = Deadline(getattr(args, "timeout", None) or COMMAND_TIMEOUT)
    plugins.registry(deadline, command=str(getattr(args, "command", None) or "aiaudit"))
    return deadline


def add_ruleset(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ruleset", default=DEFAULT_RULESET, metavar="NAME|PATH",
                   help=f"shipped (or plugin) ruleset name, or a ruleset file given as a "
                        f"path: ./x.yaml, a name with '/' or ending .yaml/.yml (a file in "
                        f"the working directory never stands for a name; default "
                        f"{DEFAULT_RULESET})")


def load_ruleset(ref: str, *, validate: bool | None = None,
                  only: Sequence[str] = (), skip: Sequence[str] = ()):
    """The ruleset; with ``only``/``skip``, a shipped ruleset binds just the rules that run
    (a one-rule scan does not import every check module)."""
    from aiaudit.core import plugins, ruleset

    select = None
    if only or skip:
        wanted, unwanted = set(only), set(skip)

        def select(rid: str) -> bool:
            return (not wanted or rid in wanted) and rid not in unwanted

    return ruleset.load(ref, plugins.registry(), validate=validate, select=select)


# ------------------------------------------------------------------ reports: render, remediate
DEFAULT_SYSLOG_SOCKET = "/dev/log"
"""Same as :data:`aiaudit.modes.syslog.DEFAULT_SOCKET` (not imported: it loads socket)."""


def add_syslog_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--syslog", nargs="?", const=DEFAULT_SYSLOG_SOCKET, default=None,
                   metavar="SOCKET",
                   help=f"also send one JSON event per result to syslog (ident aiaudit, "
                        f"facility user) through SOCKET (default {DEFAULT_SYSLOG_SOCKET})")


def add_sarif_category_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sarif-category", metavar="TEXT", default=None,
                   help="SARIF: the code-scanning category (runAutomationDetails.id, a final "
                        "/ added) instead of aiaudit/RULESET/HOST-OR-IMAGE-NAME/; keep it the "
                        "same for every scan of one host or image so that fixed alerts close")


def add_pretty_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pretty", action="store_true",
                   help="json format: indent it in files and pipes too (default: compact "
                        "there, indented on a terminal)")


def add_image_options(p: argparse.ArgumentParser) -> None:
    """``--image-kind KIND`` and ``--kernel-cmdline 'PARAMS'``: what the scanned root is
    and the command line its kernel boots with, where its files cannot say (issue 27)."""
    from aiaudit.core.model import IMAGE_KINDS

    p.add_argument("--image-kind", choices=IMAGE_KINDS, default=None,
                   help="what the root is, when its files say it wrong: bootable (its own "
                        "boot loader), stateless (a provisioner such as Warewulf or xCAT "
                        "boots it and passes its kernel command line), container (no "
                        "init, no kernel: boot-time rules are its host's); default: "
                        "detected")
    p.add_argument("--kernel-cmdline", type=kernel_cmdline, default=None, metavar="'PARAMS'",
                   help="the kernel command line the next boot uses (e.g. what the "
                        "provisioner passes a stateless image); overrides the boot loader "
                        "files; fixes for it are for the provisioner")


def kernel_cmdline(text: str) -> str:
    """A kernel command line as given on ours: the kernel splits it at white space
    (``lib/cmdline.c`` ``next_arg``: ``isspace``), so tabs and line feeds (a pasted
    ``/proc/cmdline``) are separators; any other control character is no boot parameter
    and a usage error."""
    bad = next((c for c in text if (ord(c) < 0x20 and c not in "\t\n\v\f\r")
                or ord(c) == 0x7F), None)
    if bad is not None:
        raise argparse.ArgumentTypeError(f"control character {bad!r} in the command line "
                                         f"(at {text.index(bad)})")
    return text


def non_negative_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return v
