"""Command line: arguments, exit codes and the one error boundary.  No audit logic here."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, NoReturn, Sequence

from aiaudit import __version__
from aiaudit.core.errors import AuditError, ExitCode, RulesetError, UsageError
from aiaudit.core.model import SEVERITIES, Severity, Status
from aiaudit.core.records import record

if TYPE_CHECKING:
    from aiaudit.core.model import Finding, RunResult, Waiver

if TYPE_CHECKING:
    from aiaudit.core.model import RunResult
    from aiaudit.core.plugins import Registry

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
"""

DEFAULT_RULESET = "dl-training"
DEFAULT_FAIL_ON = "medium"
DEFAULT_TIMEOUT = 120.0
PROLOG_TIMEOUT = 10.0
"""Default scan deadline with ``--prolog``: a job should not wait long for its node."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line and exit code 2 (usage)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}\n")


MAX_SECONDS = 86400.0
"""Longest ``--timeout`` / ``--rule-timeout`` (one day): a larger value is a typo, and
``1e19`` s overflows the interpreter's timeouts (OverflowError in ``thread.join``)."""


def _positive_float(text: str) -> float:
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


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, sized as ``shutil.get_terminal_size`` would size it but without
    importing ``shutil`` (argparse builds a formatter for every ``add_argument``, and
    ``shutil`` pulls in bz2, lzma and zlib: 4 ms of every scan's start-up)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width)


class _RawFormatter(argparse.RawDescriptionHelpFormatter, _HelpFormatter):
    """:class:`_HelpFormatter` that keeps the description and epilog as written."""


def _columns() -> int:
    """Terminal width: ``$COLUMNS``, else the width of stdout's terminal, else 80."""
    with contextlib.suppress(ValueError):
        if int(os.environ.get("COLUMNS", "")) > 0:
            return int(os.environ["COLUMNS"])
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``aiaudit`` argument parser; with ``command``, only that subcommand gets its
    arguments (the others are listed with their help line): a scan should not pay for
    building the options of five commands it does not run."""
    p = _Parser(
        prog="aiaudit",
        description="Read-only audit of a Linux host (or a mounted root filesystem) for "
                    "deep-learning training: kernel tuning, limits, SSH, network, GPU stack.",
        epilog=EXIT_CODES_HELP,
        formatter_class=_RawFormatter,
    )
    p.add_argument("--version", action="version", version=f"aiaudit {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (populate, kwargs) in _SUBCOMMANDS.items():
        sp = sub.add_parser(name, **kwargs)
        if command is None or command == name:
            populate(sp)
    return p


def _populate_scan(s: argparse.ArgumentParser) -> None:
    _add_ruleset(s)
    s.add_argument("--root", default="/", metavar="DIR",
                   help="root of the system to audit (default /); another root is scanned "
                        "offline unless --live")
    mode = s.add_mutually_exclusive_group()
    mode.add_argument("--live", dest="live", action="store_true", default=None,
                      help="read live state (/proc, /sys) under the root")
    mode.add_argument("--offline", dest="live", action="store_false",
                      help="only read configuration files (what the next boot will do)")
    s.add_argument("--user", metavar="NAME",
                   help="training user (default: $SLURM_JOB_USER, $SUDO_USER when scanning /, "
                        "ruleset)")
    s.add_argument("--format", default="text", metavar="FORMAT",
                   help="output format for stdout / --output FILE (text, json, ...)")
    s.add_argument("--output", "-o", action="append", default=[], metavar="[FORMAT:]FILE",
                   help="write a report to FILE (repeatable; FORMAT:FILE picks its format)")
    s.add_argument("--fail-on", choices=SEVERITIES, default=None,
                   help=f"lowest severity whose failure sets exit code 1 "
                        f"(default: ruleset's, else {DEFAULT_FAIL_ON})")
    s.add_argument("--only", nargs="+", default=[], metavar="RULE_ID",
                   help="run only these rules")
    s.add_argument("--skip", nargs="+", default=[], metavar="RULE_ID",
                   help="do not run these rules")
    s.add_argument("--timeout", type=_positive_float, default=None, metavar="SECONDS",
                   help=f"deadline for the whole scan; rules not finished by then are "
                        f"reported as not evaluated, and the reports must be written by "
                        f"then ({REPORT_MIN_S:g} s after the rules, if later; else exit 2) "
                        f"(default {DEFAULT_TIMEOUT:g}, {PROLOG_TIMEOUT:g} with --prolog; "
                        f"at most {MAX_SECONDS:g})")
    s.add_argument("--rule-timeout", type=_positive_float, default=None, metavar="SECONDS",
                   help=f"time one rule may take before it is abandoned (default 20; at "
                        f"most {MAX_SECONDS:g})")
    s.add_argument("--verbose", "-v", action="store_true",
                   help="text format: show details of passed and skipped rules")
    _add_pretty_option(s)
    s.add_argument("--debug", action="store_true",
                   help="re-raise unexpected errors in checks (for developers)")
    _add_syslog_option(s)
    _add_sarif_category_option(s)
    _add_mode_options(s)


def _populate_explain(e: argparse.ArgumentParser) -> None:
    e.add_argument("rule_id", metavar="RULE_ID", help="rule id (any case)")
    _add_ruleset(e)


def _populate_rules(r: argparse.ArgumentParser) -> None:
    _add_ruleset(r)
    r.add_argument("--tag", action="append", default=[], metavar="TAG",
                   help="only rules with this tag (repeatable: any of them)")


def _populate_validate(v: argparse.ArgumentParser) -> None:
    v.add_argument("file", metavar="FILE")


def _add_ruleset(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ruleset", default=DEFAULT_RULESET, metavar="NAME|PATH",
                   help=f"shipped (or plugin) ruleset name, or a ruleset file given as a "
                        f"path: ./x.yaml, a name with '/' or ending .yaml/.yml (a file in "
                        f"the working directory never stands for a name; default "
                        f"{DEFAULT_RULESET})")


def _load_ruleset(ref: str, *, validate: bool | None = None,
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


def _resolve_user(args: argparse.Namespace, rs_settings: dict[str, Any]
                  ) -> tuple[str | None, str | None]:
    if args.user:
        return args.user, "--user"
    # sudo's caller is a user of this machine: scanning another root (an image), it is
    # not that root's training user (a CI runner would become one)
    other_root = os.path.realpath(getattr(args, "root", "/")) != "/"
    for var in ("SLURM_JOB_USER", "SUDO_USER"):
        if var == "SUDO_USER" and other_root:
            continue
        if os.environ.get(var):
            return os.environ[var], f"${var}"
    if rs_settings.get("user"):
        return str(rs_settings["user"]), "ruleset settings.user"
    return None, None


def _parse_outputs(args: argparse.Namespace, known: Mapping[str, object]
                   ) -> list[tuple[str, str | None]]:
    """[(format, path or None for stdout)]."""
    if args.format not in known:
        raise UsageError(f"unknown format {args.format!r} (known: {', '.join(sorted(known))})")
    outs: list[tuple[str, str | None]] = []
    for spec in args.output:
        fmt, sep, path = spec.partition(":")
        if sep and fmt in known:
            outs.append((fmt, path))
        elif sep and fmt and "/" not in fmt and not os.path.exists(spec):
            raise UsageError(f"--output {spec}: unknown format {fmt!r} "
                             f"(known: {', '.join(sorted(known))})")
        else:
            outs.append((args.format, spec))
    for _, path in outs:
        if not path:
            raise UsageError("--output needs a file name")
    if not outs:
        outs.append((args.format, None))
    return outs


MODES_HELP = f"""\
  --on-error pass|fail turns code 3 into 0 or 1 (--prolog: pass, so a Slurm node
  drains only for a real failure; --timeout {PROLOG_TIMEOUT:g}).  --changes-since and
  --state filter the reports, never the exit code: it always reflects the whole scan.
"""


def _add_mode_options(s: argparse.ArgumentParser) -> None:
    """Options for the operating modes: waivers, changes, prolog behaviour."""
    from aiaudit.core.runner import ON_ERROR_CHOICES

    g = s.add_argument_group("operating modes")
    g.add_argument("--waivers", metavar="FILE",
                   help="waiver file (YAML): accepted failures, each with reason, owner and "
                        "expiry; expired and unused waivers are reported as notices")
    prev = g.add_mutually_exclusive_group()
    prev.add_argument("--changes-since", metavar="PREVIOUS.json",
                      help="report only results whose status changed since this saved JSON "
                           "scan (added, fixed, changed; key: rule id + subject)")
    prev.add_argument("--state", metavar="FILE",
                      help="like --changes-since FILE, but a missing FILE is a first run "
                           "(everything reported); FILE is then replaced by this full scan")
    g.add_argument("--on-error", choices=ON_ERROR_CHOICES, default=None,
                   help="exit code when no rule at or above --fail-on failed but one could "
                        "not be evaluated (error, deadline): code = 3 (default), fail = 1, "
                        "pass = 0 (default with --prolog: do not drain a node because a "
                        "check could not look)")
    g.add_argument("--reason", action="store_true",
                   help="print one line on stderr naming the worst failure (or what could "
                        "not be evaluated), e.g. for a Slurm drain reason")
    g.add_argument("--prolog", action="store_true",
                   help=f"Slurm prolog preset: --timeout {PROLOG_TIMEOUT:g}, --on-error pass "
                        "and --reason unless given; runs no Slurm command")


@record
class _Modes:
    """What the operating-mode options resolve to (read before the scan starts)."""

    timeout: float
    on_error: str
    reason: bool
    waivers: tuple[Waiver, ...] = ()
    previous: RunResult | None = None
    previous_origin: str | None = None
    """Set when results are to be filtered by --changes-since / --state."""
    state_path: str | None = None


def _mode_inputs(args: argparse.Namespace) -> _Modes:
    """Resolve the mode options and read their input files (bad file: UsageError)."""
    prolog = bool(getattr(args, "prolog", False))
    timeout = args.timeout or (PROLOG_TIMEOUT if prolog else DEFAULT_TIMEOUT)
    on_error = args.on_error or ("pass" if prolog else "code")
    waivers: tuple[Waiver, ...] = ()
    if args.waivers:
        from aiaudit.core.waivers import load_waivers

        waivers = load_waivers(args.waivers)
    previous, origin = None, None
    if args.changes_since:
        from aiaudit.modes.changes import load_previous

        previous, origin = load_previous(args.changes_since), args.changes_since
    elif args.state:
        from aiaudit.modes.changes import load_previous

        origin = args.state
        if os.path.lexists(args.state):
            previous = load_previous(args.state)
        elif not os.path.isdir(os.path.dirname(os.path.abspath(args.state))):
            raise UsageError(f"--state {args.state}: the directory does not exist")
    return _Modes(timeout=timeout, on_error=on_error, reason=args.reason or prolog,
                  waivers=waivers, previous=previous, previous_origin=origin,
                  state_path=args.state)


def _shown_run(run: RunResult, modes: _Modes) -> RunResult:
    """The run the reports show: only the changes with --changes-since / --state."""
    if modes.previous_origin is None:
        return run
    from aiaudit.modes.changes import changes_since

    return changes_since(run, modes.previous, modes.previous_origin)


def _finish_modes(run: RunResult, modes: _Modes, fail_on: Severity, code: int) -> int:
    """After the reports: save the --state scan, print the --reason line.  Returns the exit
    code: a --state file that cannot be saved is one message and keeps the scan's verdict
    (1 or 3; 2 instead of 0, since the next run would compare with an old scan)."""
    if modes.state_path:
        from aiaudit.core.escape import text_safe
        from aiaudit.reporters.json import render

        try:
            _write_atomic(modes.state_path, text_safe(render(run, {})))
        except (_OutputError, _ReportDeadline) as exc:
            why = str(exc) if isinstance(exc, _OutputError) else "the deadline passed"
            _error(f"--state: this scan was not saved ({why}); the next run compares with "
                   "the previous state")
            if code not in (ExitCode.FAILED, ExitCode.NOT_EVALUATED):
                code = ExitCode.USAGE
    if modes.reason:
        line = reason_line(run, fail_on, code)
        if line:
            print(line, file=sys.stderr)
    return code


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def reason_line(run: RunResult, fail_on: Severity, code: int, limit: int = 250) -> str | None:
    """One line for a drain reason: the worst failure at or above ``fail_on`` (else the
    first rule that could not be evaluated) and how many more; ``None`` if nothing to say.

    ``aiaudit: FAIL MEMLOCK-SOFT (alice: 64 KiB, expected unlimited); 2 more``
    """
    def worst(status: Status) -> list[Finding]:
        found = [f for f in run.findings
                 if f.status is status and f.severity.rank >= fail_on.rank]
        return sorted(found, key=lambda f: (-f.severity.rank, f.rule_id, f.result.subject))

    failed, errors = worst(Status.FAIL), worst(Status.ERROR)
    if failed:
        head, items = "FAIL", failed
    elif errors:
        head = "ERROR" if code else "WARN not evaluated"
        items = errors
    else:
        return None
    from aiaudit.core.escape import human_safe
    from aiaudit.reporters._common import plain_expected

    f = items[0]
    r = f.result
    subject = "" if r.subject in ("", "-") else f"{r.subject}: "
    if r.status is Status.FAIL and r.actual is not None and r.expected is not None:
        detail = f"{subject}{r.actual}, expected {plain_expected(r.expected)}"
    else:
        detail = f"{subject}{r.message}"
    # host text goes to a terminal, slurmd's log and the journal: no control character
    # (an ESC sequence, or a line feed that would fake another "aiaudit: " line)
    detail = human_safe(_one_line(detail, 10 * limit))
    rule = human_safe(f.rule_id)
    more = f"; {len(items) - 1} more" if len(items) > 1 else ""
    budget = limit - len(f"aiaudit: {head} {rule} ()") - len(more)
    return f"aiaudit: {head} {rule} ({_one_line(detail, max(budget, 20))}){more}"


class _OutputError(UsageError):
    """A report (or the --state file) could not be rendered or written; the message names
    which and why."""


class _ReportDeadline(BaseException):
    """Raised in the main thread when rendering and writing overrun the scan deadline.  A
    BaseException, so that a reporter's ``except Exception`` cannot swallow it."""


REPORT_MIN_S = 5.0
"""Time the reports get after the rules when the rules used up the --timeout deadline."""
REPORT_HARD_GRACE_S = 2.0
"""When the alarm cannot interrupt the main thread (a plugin that ignores or blocks
SIGALRM, a call that retries after it), the watchdog thread ends the process this long after
the deadline.  Code that holds the GIL for good stops the watchdog too: only a process
outside (a worker with a hard kill) could end that."""


def _error(message: str) -> None:
    """One ``aiaudit: error:`` line on stderr (stderr itself may be gone: nothing to do)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"aiaudit: error: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _deadline(seconds: float, what: str) -> Iterator[None]:
    """Bound the block to ``seconds``: a SIGALRM timer raises :class:`_ReportDeadline` in the
    main thread (a busy reporter, a catastrophic regex, a write to a pipe nobody reads); a
    watchdog thread ends the process with one message and exit code 2 if the main thread
    does not give way within :data:`REPORT_HARD_GRACE_S` more (a reporter that ignores
    SIGALRM)."""
    import signal
    import threading

    def hard_exit() -> None:
        with contextlib.suppress(OSError):
            os.write(2, f"aiaudit: error: {what} not finished {seconds:.3g} s after the "
                        f"rules; stopped\n".encode())
        os._exit(ExitCode.USAGE)

    def on_alarm(_signum: int, _frame: object) -> None:
        raise _ReportDeadline

    watchdog = threading.Timer(seconds + REPORT_HARD_GRACE_S, hard_exit)
    watchdog.daemon = True
    main = threading.current_thread() is threading.main_thread() and hasattr(signal,
                                                                             "setitimer")
    old = signal.signal(signal.SIGALRM, on_alarm) if main else None
    try:
        if main:
            signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
        watchdog.start()
        yield
    finally:
        watchdog.cancel()
        if main:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old if old is not None else signal.SIG_DFL)


def _write_atomic(path: str, text: str) -> None:
    """Write ``path`` through a temporary file in the same directory, fsync and a rename,
    so a reader (the next --state run, a log shipper) never sees an empty or half file.

    A symlink is followed (the file it names is replaced); an existing file keeps its mode
    and, where permitted, its owner; a path that is not a regular file (``/dev/stdout``, a
    FIFO, ``/dev/null``) is written directly, never replaced.  Raises :class:`_OutputError`.
    """
    import stat

    try:
        try:
            st: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            return
        target = os.path.realpath(path)
        folder, name = os.path.split(target)
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                if st is not None:
                    os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
                    with contextlib.suppress(OSError):
                        os.fchown(fh.fileno(), st.st_uid, st.st_gid)
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise _OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL byte in the name (only through the API)
        raise _OutputError(f"cannot write {path!r}: {exc}") from None


def _write_stdout(text: str) -> None:
    """Write ``text`` to stdout, all of it or an error: a closed stdout, a full disk
    (``/dev/full``) or a closed pipe (EPIPE) is :class:`_OutputError`.

    The bytes go to the file descriptor with ``os.write`` until all are taken: a
    ``sys.stdout.write`` + ``flush`` that the kernel accepts only partly (a pipe whose reader
    left after 64 KiB) returns without an error and drops the rest (CPython 3.11).  After a
    failure stdout is pointed at /dev/null, so the flush at exit cannot fail again."""
    stream = sys.stdout
    if stream is None:
        raise _OutputError("cannot write to stdout: it is closed")
    try:
        try:
            fd = stream.fileno()
        except (OSError, ValueError, AttributeError):  # not a file (tests capture it)
            stream.write(text)
            stream.flush()
            return
        stream.flush()  # whatever was printed before
        data = memoryview(text.encode("utf-8", "replace"))
        while data:
            data = data[os.write(fd, data):]
    except (OSError, ValueError) as exc:
        _silence_stdout()
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise _OutputError(f"cannot write to stdout: {why}") from None


def _say(text: str = "") -> None:
    """One line on stdout, through :func:`_write_stdout` (errors are not silent)."""
    _write_stdout(text + "\n")


def _silence_stdout() -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _occupy_closed_std_fds() -> None:
    """A closed fd 0, 1 or 2 (``>&-``) is opened on /dev/null: otherwise the next file
    aiaudit opens would become "stdout", and a report would land in it.  ``sys.stdout``
    stays ``None``, so writing a report there is still an error."""
    for fd, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            with contextlib.suppress(OSError):
                got = os.open(os.devnull, flags)
                if got != fd:
                    os.dup2(got, fd)
                    os.close(got)


def cmd_scan(args: argparse.Namespace) -> int:
    """``aiaudit scan``."""
    from aiaudit.core import plugins
    from aiaudit.core.host import Deadline, Host
    from aiaudit.core.runner import ScanOptions, exit_status, scan

    started = time.monotonic()
    if not os.path.isdir(args.root):
        raise UsageError(f"--root {args.root}: not a directory")
    # the deadline runs from here: loading third-party plugins counts (runner.ScanOptions)
    deadline = Deadline(args.timeout or (PROLOG_TIMEOUT if args.prolog else DEFAULT_TIMEOUT))
    reg = plugins.registry(deadline)
    outputs = _parse_outputs(args, reg.reporters)
    rs = _load_ruleset(args.ruleset, only=args.only, skip=args.skip)
    ids = {r.id for r in rs.rules} | set(rs.disabled) | set(rs.unbound)
    for rid in [*args.only, *args.skip]:
        if rid not in ids:
            raise UsageError(f"unknown rule {rid!r} in ruleset {rs.name}")
    fail_on = Severity(args.fail_on or rs.settings.get("fail_on") or DEFAULT_FAIL_ON)
    user, user_source = _resolve_user(args, dict(rs.settings))
    modes = _mode_inputs(args)
    host = Host(args.root, live=args.live)
    opts = ScanOptions(
        user=user, user_source=user_source, only=tuple(args.only), skip=tuple(args.skip),
        timeout=modes.timeout, fail_on=fail_on, reraise=args.debug, waivers=modes.waivers,
        deadline=deadline,
        settings=dict(rs.settings),
        **({"rule_timeout": args.rule_timeout} if args.rule_timeout else {}),
    )
    run = scan(rs, host, opts)
    code = exit_status(run, fail_on, on_error=modes.on_error)
    # rendering and writing are bounded by the same deadline as the rules
    budget = max(started + modes.timeout - time.monotonic(), REPORT_MIN_S)
    try:
        with _deadline(budget, "the reports were"):
            shown = _shown_run(run, modes)
            if _emit(reg, shown, outputs, verbose=args.verbose, debug=args.debug,
                     sarif_category=args.sarif_category, pretty=args.pretty):
                code = ExitCode.USAGE
            code = _finish_modes(run, modes, fail_on, code)
            if args.syslog:
                code = _send_syslog(shown, args.syslog, code)
    except _ReportDeadline:
        _error(f"the reports were not finished by the deadline (--timeout "
               f"{modes.timeout:g} s, at least {REPORT_MIN_S:g} s after the rules)")
        return ExitCode.USAGE
    return code


def _emit(reg: Registry, run: RunResult, outputs: list[tuple[str, str | None]], *,
          verbose: bool = False, debug: bool = False,
          sarif_category: str | None = None, pretty: bool = False) -> list[str]:
    """Render ``run`` once per requested output and write each (stdout or its file,
    atomically).  A reporter that fails or a write that fails costs only that output: one
    message on stderr each, the others are still written.  Returns the messages (empty:
    all written).  :class:`_ReportDeadline` ends the loop: what was written stays, the rest
    is named as not written."""
    from aiaudit.core.escape import text_safe

    problems: list[str] = []
    for i, (fmt, path) in enumerate(outputs):
        where = path if path is not None else "stdout"
        try:
            tty = path is None and sys.stdout is not None and sys.stdout.isatty()
            color = tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
            text = _render(reg.reporters[fmt], run, {"color": color, "verbose": verbose,
                                                       "sarif_category": sarif_category,
                                                       "pretty": pretty or tty},
                           debug)
            # text_safe: undecodable file names (surrogate escapes) must not crash the write
            text = text_safe(text)
            if path is None:
                _write_stdout(text)
            else:
                _write_atomic(path, text)
        except _OutputError as exc:
            problems.append(f"{exc}; the {fmt} report for {where} was not written")
            _error(problems[-1])
        except _ReportDeadline:
            lost = ", ".join(f"{f}:{p if p is not None else 'stdout'}" for f, p in outputs[i:])
            _error(f"not written by the deadline: {lost}")
            raise
    return problems


def _render(spec: Any, run: RunResult, options: dict[str, Any], debug: bool) -> str:
    """``spec.render``, with whatever a (third-party) reporter does wrong turned into one
    :class:`_OutputError` naming the format and the module that provides it."""
    try:
        text = spec.render(run, options)
    except (KeyboardInterrupt, _ReportDeadline):
        raise
    except BaseException as exc:  # SystemExit and GeneratorExit included: only this output
        if debug:
            raise
        detail = f": {_one_line(str(exc), 200)}" if str(exc) else ""
        raise _OutputError(f"reporter {spec.name!r} ({_provider(spec)}) failed: "
                           f"{type(exc).__name__}{detail}") from None
    if not isinstance(text, str):
        raise _OutputError(f"reporter {spec.name!r} ({_provider(spec)}) returned "
                           f"{type(text).__name__}, not text")
    return text


def _provider(spec: Any) -> str:
    """Who provides a reporter, for messages: its plugin (where the registry records it),
    else the module of its render function."""
    plugin = getattr(spec, "plugin", None)
    if plugin:
        return f"plugin {plugin}"
    return f"module {getattr(spec.render, '__module__', None) or '?'}"


def cmd_rules(args: argparse.Namespace) -> int:
    """``aiaudit rules``."""
    from aiaudit.cli.explain import rules_table

    _write_stdout(rules_table(_load_ruleset(args.ruleset), args.tag))
    return ExitCode.OK


def cmd_explain(args: argparse.Namespace) -> int:
    """``aiaudit explain RULE_ID``."""
    from aiaudit.cli.explain import explain

    _write_stdout(explain(_load_ruleset(args.ruleset), args.rule_id))
    return ExitCode.OK


def cmd_validate(args: argparse.Namespace) -> int:
    """``aiaudit validate FILE``."""
    rs = _load_ruleset(args.file if "/" in args.file else os.path.join(".", args.file),
                       validate=True)
    _say(f"{args.file}: ok ({rs.name} {rs.version}, {len(rs.rules)} rules)")
    return ExitCode.OK


# ------------------------------------------------------------------ reports: render, remediate
DEFAULT_SYSLOG_SOCKET = "/dev/log"
"""Same as :data:`aiaudit.modes.syslog.DEFAULT_SOCKET` (not imported: it loads socket)."""


def _add_syslog_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--syslog", nargs="?", const=DEFAULT_SYSLOG_SOCKET, default=None,
                   metavar="SOCKET",
                   help=f"also send one JSON event per result to syslog (ident aiaudit, "
                        f"facility user) through SOCKET (default {DEFAULT_SYSLOG_SOCKET})")


def _add_sarif_category_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sarif-category", metavar="TEXT", default=None,
                   help="SARIF: the code-scanning category (runAutomationDetails.id, a final "
                        "/ added) instead of aiaudit/RULESET/HOST-OR-IMAGE-NAME/; keep it the "
                        "same for every scan of one host or image so that fixed alerts close")


def _add_pretty_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pretty", action="store_true",
                   help="json format: indent it in files and pipes too (default: compact "
                        "there, indented on a terminal)")


def _populate_render(d: argparse.ArgumentParser) -> None:
    d.add_argument("report", metavar="SCAN.json", help="saved JSON report (- for stdin)")
    d.add_argument("--format", default="text", metavar="FORMAT",
                   help="output format for stdout / --output FILE (text, json, sarif, ...)")
    d.add_argument("--output", "-o", action="append", default=[], metavar="[FORMAT:]FILE",
                   help="write to FILE (repeatable; FORMAT:FILE picks its format)")
    d.add_argument("--verbose", "-v", action="store_true",
                   help="text format: show details of passed and skipped rules")
    _add_sarif_category_option(d)
    _add_pretty_option(d)


def _populate_remediate(m: argparse.ArgumentParser) -> None:
    m.add_argument("report", metavar="SCAN.json", help="saved JSON report (- for stdin)")
    m.add_argument("--output-dir", "-d", required=True, metavar="DIR",
                   help="directory for the bundle (created; must be empty unless --force)")
    m.add_argument("--min-severity", choices=SEVERITIES, default="info",
                   help="only fix failures at or above this severity (default info: all)")
    m.add_argument("--force", action="store_true",
                   help="write into DIR even if it is not empty")


FLEET_FORMATS = ("text", "json", "html", "prometheus")
FLEET_EXIT_HELP = """\
exit codes (the fleet is judged as one scan, a rule failing on more than
--max-failing-nodes nodes counting as failed):
  0  no rule at or above --fail-on fails on more than N nodes
  1  one does (a machine id shared by several hosts counts as a high failure)
  2  usage error, or no usable report among the inputs
  3  no such failure, but a rule at or above --fail-on could not be evaluated
     on more than N nodes
  5  some input was unusable (one line each on stderr; the rest is aggregated)
     and the fleet would otherwise exit 0 or 3
"""


def _non_negative_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return v


def _populate_fleet(f: argparse.ArgumentParser) -> None:
    f.add_argument("inputs", nargs="+", metavar="REPORT",
                   help="saved JSON reports or event files, directories of them, globs, "
                        "or - for a stream of reports or events (JSON lines) on stdin")
    f.add_argument("--format", default="text", choices=FLEET_FORMATS,
                   help="output format for stdout / --output FILE (default text)")
    f.add_argument("--output", "-o", action="append", default=[], metavar="[FORMAT:]FILE",
                   help="write to FILE (repeatable; FORMAT:FILE picks its format; written "
                        "through a rename, so a textfile collector never reads half)")
    f.add_argument("--fail-on", choices=SEVERITIES, default=DEFAULT_FAIL_ON,
                   help=f"lowest severity whose failure counts (default {DEFAULT_FAIL_ON})")
    f.add_argument("--max-failing-nodes", type=_non_negative_int, default=0, metavar="N",
                   help="fail only when a rule fails on more than N nodes (default 0)")
    f.add_argument("--since", metavar="PREVIOUS-FLEET.json",
                   help="report which nodes got worse or better since this saved "
                        "`aiaudit fleet --format json` report")
    f.add_argument("--top", type=_non_negative_int, default=20, metavar="N",
                   help="text format: list at most N rules, outliers, changes (default 20)")
    f.add_argument("--jobs", "-j", type=_non_negative_int, default=0, metavar="N",
                   help="processes that read and decode reports (default 0: one per CPU, "
                        "one fewer for stdin alone, at most 8; 1: no worker process)")


def _populate_sshd(p: argparse.ArgumentParser) -> None:
    from aiaudit.cli import sshd as sshd_view

    sshd_view.populate(p)


def cmd_sshd(args: argparse.Namespace) -> int:
    """``aiaudit sshd [--connection SPEC]`` (:mod:`aiaudit.cli.sshd`)."""
    from aiaudit.cli import sshd as sshd_view

    return sshd_view.cmd(args)


_SUBCOMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], dict[str, Any]]] = {
    "scan": (_populate_scan, {"help": "scan the host or a root filesystem",
                              "epilog": EXIT_CODES_HELP + "\n" + MODES_HELP,
                              "formatter_class": _RawFormatter}),
    "rules": (_populate_rules, {"help": "list the rules of a ruleset: id, severity, "
                                        "expected value, title"}),
    "explain": (_populate_explain, {"help": "explain a rule: rationale, references, fix"}),
    "validate": (_populate_validate,
                 {"help": "validate a ruleset file and report every problem"}),
    "render": (_populate_render, {
        "help": "re-render a saved JSON report in another format",
        "description": "Read a report written by `aiaudit scan -o json:FILE` (validated "
                       "against schemas/report.schema.json) and render it again."}),
    "remediate": (_populate_remediate, {
        "help": "write a fix bundle (files, install.sh, playbook) from a saved JSON report",
        "description": "Write the drop-in files, an install.sh and an Ansible playbook that "
                       "fix the failures of a saved scan.  aiaudit itself changes nothing on "
                       "the host."}),
    "fleet": (_populate_fleet, {
        "help": "aggregate many nodes' reports: per-rule host lists, drift, identity",
        "description": "Read saved JSON reports and event streams of many nodes (reports\n"
                       "of different aiaudit versions or rulesets are grouped, not mixed)\n"
                       "and report per rule which nodes fail, values that differ from the\n"
                       "majority, cloned machine ids and, with --since, what changed.",
        "epilog": FLEET_EXIT_HELP, "formatter_class": _RawFormatter}),
    "sshd": (_populate_sshd, {
        "help": "print the effective sshd configuration for a connection (like sshd -T -C)",
        "description": "The scanned root's effective sshd configuration as `sshd -T` prints "
                       "it, for the connection given with --connection (Match blocks "
                       "evaluated as sshd does); read-only, nothing is executed."}),
}
"""Each subcommand: what adds its arguments, and its ``add_parser`` keywords."""


def cmd_render(args: argparse.Namespace) -> int:
    """``aiaudit render SCAN.json``."""
    from aiaudit.core import plugins
    from aiaudit.modes.savedreport import load_report

    reg = plugins.registry()
    outputs = _parse_outputs(args, reg.reporters)
    run = load_report(args.report)
    failed = _emit(reg, run, outputs, verbose=args.verbose,
                   sarif_category=args.sarif_category, pretty=args.pretty)
    return ExitCode.USAGE if failed else ExitCode.OK


def cmd_remediate(args: argparse.Namespace) -> int:
    """``aiaudit remediate SCAN.json --output-dir DIR``."""
    from aiaudit.modes.savedreport import load_report
    from aiaudit.remediate import bundle as remediate

    run = load_report(args.report)
    b = remediate.write(run, args.output_dir, min_severity=Severity(args.min_severity),
                        force=args.force)
    _say(f"{args.output_dir}: {len(b.fixed)} failure(s) addressed: {len(b.files)} file(s), "
         f"{len(b.edits)} edit(s), {len(b.commands)} command(s); {len(b.needs_hand())} need a "
         f"step by hand.  Review {os.path.join(args.output_dir, remediate.README)}, then run "
         f"{remediate.SCRIPT}.")
    return ExitCode.OK


def _send_syslog(run: RunResult, socket_path: str, code: int) -> int:
    """Send the run's events to syslog; on failure one message and exit code 2, unless the
    scan already exits 1 or 3 (that code says more about the host and is kept)."""
    from aiaudit.modes.syslog import SyslogError, send
    from aiaudit.reporters.events import events

    try:
        send(events(run), socket_path=socket_path)
    except SyslogError as exc:
        print(f"aiaudit: error: --syslog: {exc}", file=sys.stderr)
        return code if code in (ExitCode.FAILED, ExitCode.NOT_EVALUATED) else ExitCode.USAGE
    return code


def cmd_fleet(args: argparse.Namespace) -> int:
    """``aiaudit fleet REPORT...``."""
    from aiaudit.fleet import gate
    from aiaudit.fleet.collect import collect, default_jobs
    from aiaudit.fleet.render import RENDERERS

    outputs = _parse_outputs(args, RENDERERS)
    previous = None
    if args.since:
        from aiaudit.fleet.since import load_previous

        previous = load_previous(args.since)
    fleet = collect(args.inputs, jobs=args.jobs or default_jobs(args.inputs))
    for problem in fleet.problems:
        print(f"aiaudit: error: {problem}", file=sys.stderr)
    if not fleet.reports:
        raise UsageError("no usable report among the inputs")
    if previous is not None:
        import dataclasses

        from aiaudit.fleet.since import compare

        fleet = dataclasses.replace(fleet, since=compare(fleet, previous, args.since))
    for fmt, path in outputs:
        text = RENDERERS[fmt](fleet, args.fail_on, args.max_failing_nodes, top=args.top)
        if path is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            _write_atomic(path, text)
    return gate.exit_code(fleet, args.fail_on, args.max_failing_nodes)


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
    _occupy_closed_std_fds()
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
            _write_stdout("")
        return code
    except _ReportDeadline:  # the timer fired just as the reports were finished
        _error("the reports were not finished by the deadline")
        return ExitCode.USAGE
    except RulesetError as exc:
        for problem in exc.problems:
            print(f"aiaudit: error: {problem}", file=sys.stderr)
        return ExitCode.USAGE
    except AuditError as exc:
        print(f"aiaudit: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except BrokenPipeError:  # print() of rules/explain into a closed pipe
        _silence_stdout()
        _error("cannot write to stdout: Broken pipe")
        return ExitCode.USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if getattr(args, "debug", False):
            raise
        print(f"aiaudit: internal error: {type(exc).__name__}: {exc} "
              "(run with --debug for a traceback)", file=sys.stderr)
        return 4
