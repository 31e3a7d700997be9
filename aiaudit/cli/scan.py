"""``aiaudit scan``: options, operating modes (waivers, --changes-since/--state, --reason,
--prolog), the scan and its reports."""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING, Any

from aiaudit.cli.options import (
    DEFAULT_FAIL_ON,
    DEFAULT_TIMEOUT,
    EXIT_CODES_HELP,
    MAX_SECONDS,
    PROLOG_TIMEOUT,
    add_image_options,
    add_pretty_option,
    add_ruleset,
    add_sarif_category_option,
    add_syslog_option,
    load_ruleset,
    positive_float,
)
from aiaudit.cli.output import (
    OutputError,
    ReportDeadline,
    emit,
    error,
    one_line,
    parse_outputs,
    report_deadline,
    to_stderr,
    write_atomic,
)
from aiaudit.core.errors import ExitCode, UsageError
from aiaudit.core.model import SEVERITIES, Severity, Status
from aiaudit.core.startup.collector import loading
from aiaudit.core.startup.records import record

if TYPE_CHECKING:
    from aiaudit.core.host import Host
    from aiaudit.core.model import Finding, RunResult, Waiver
    from aiaudit.core.plugins import Registry
    from aiaudit.core.ruleset import Ruleset
    from aiaudit.core.scan import ScanOptions

REPORT_MIN_S = 5.0
"""Time the reports get after the rules when the rules used up the --timeout deadline."""


def populate_scan(s: argparse.ArgumentParser) -> None:
    """Arguments of ``aiaudit scan`` (and its epilog: exit codes, operating modes)."""
    s.epilog = EXIT_CODES_HELP + "\n" + MODES_HELP
    add_ruleset(s)
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
    add_image_options(s)
    s.add_argument("--format", default=None, metavar="FORMAT",
                   help="report format for stdout and plain --output FILE (text, json, "
                        "...; default text); given with only --output FORMAT:FILE of "
                        "other formats, it still goes to stdout")
    s.add_argument("--output", "-o", action="append", default=[], metavar="[FORMAT:]FILE",
                   help="write a report to FILE instead of stdout (repeatable; "
                        "FORMAT:FILE picks its format)")
    s.add_argument("--fail-on", choices=SEVERITIES, default=None,
                   help=f"lowest severity whose failure sets exit code 1 "
                        f"(default: ruleset's, else {DEFAULT_FAIL_ON})")
    s.add_argument("--only", nargs="+", default=[], metavar="RULE_ID",
                   help="run only these rules")
    s.add_argument("--skip", nargs="+", default=[], metavar="RULE_ID",
                   help="do not run these rules")
    s.add_argument("--timeout", type=positive_float, default=None, metavar="SECONDS",
                   help=f"deadline for the whole scan; rules not finished by then are "
                        f"reported as not evaluated, and the reports must be written by "
                        f"then ({REPORT_MIN_S:g} s after the rules, if later; else exit 2) "
                        f"(default {DEFAULT_TIMEOUT:g}, {PROLOG_TIMEOUT:g} with --prolog; "
                        f"at most {MAX_SECONDS:g})")
    s.add_argument("--rule-timeout", type=positive_float, default=None, metavar="SECONDS",
                   help=f"time one rule may take before it is abandoned (default 20; at "
                        f"most {MAX_SECONDS:g})")
    s.add_argument("--verbose", "-v", action="store_true",
                   help="text format: show details of passed and skipped rules")
    add_pretty_option(s)
    s.add_argument("--debug", action="store_true",
                   help="re-raise unexpected errors in checks (for developers)")
    add_syslog_option(s)
    add_sarif_category_option(s)
    _add_mode_options(s)


def resolve_user(args: argparse.Namespace, rs_settings: dict[str, Any]
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


MODES_HELP = f"""\
  --on-error pass|fail turns code 3 into 0 or 1 (--prolog: pass, so a Slurm node
  drains only for a real failure; --timeout {PROLOG_TIMEOUT:g}).  --changes-since and
  --state filter the reports, never the exit code: it always reflects the whole scan.
"""


def _add_mode_options(s: argparse.ArgumentParser) -> None:
    """Options for the operating modes: waivers, changes, prolog behaviour."""
    from aiaudit.core.scan import ON_ERROR_CHOICES

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
class Modes:
    """What the operating-mode options resolve to (read before the scan starts)."""

    timeout: float
    on_error: str
    reason: bool
    waivers: tuple[Waiver, ...] = ()
    previous: RunResult | None = None
    previous_origin: str | None = None
    """Set when results are to be filtered by --changes-since / --state."""
    state_path: str | None = None


def mode_inputs(args: argparse.Namespace) -> Modes:
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
    return Modes(timeout=timeout, on_error=on_error, reason=args.reason or prolog,
                  waivers=waivers, previous=previous, previous_origin=origin,
                  state_path=args.state)


def _shown_run(run: RunResult, modes: Modes) -> RunResult:
    """The run the reports show: only the changes with --changes-since / --state."""
    if modes.previous_origin is None:
        return run
    from aiaudit.modes.changes import changes_since

    return changes_since(run, modes.previous, modes.previous_origin)


def _finish_modes(run: RunResult, modes: Modes, fail_on: Severity, code: int) -> int:
    """After the reports: save the --state scan, print the --reason line.  Returns the exit
    code: a --state file that cannot be saved is one message and keeps the scan's verdict
    (1 or 3; 2 instead of 0, since the next run would compare with an old scan)."""
    if modes.state_path:
        from aiaudit.core.escape import text_safe
        from aiaudit.reporters.json import render

        try:
            write_atomic(modes.state_path, text_safe(render(run, {})))
        except (OutputError, ReportDeadline) as exc:
            why = str(exc) if isinstance(exc, OutputError) else "the deadline passed"
            error(f"--state: this scan was not saved ({why}); the next run compares with "
                   "the previous state")
            if code not in (ExitCode.FAILED, ExitCode.NOT_EVALUATED):
                code = ExitCode.USAGE
    if modes.reason:
        line = reason_line(run, fail_on, code)
        if line:
            to_stderr(line)
    return code


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
    detail = human_safe(one_line(detail, 10 * limit))
    rule = human_safe(f.rule_id)
    more = f"; {len(items) - 1} more" if len(items) > 1 else ""
    budget = limit - len(f"aiaudit: {head} {rule} ()") - len(more)
    return f"aiaudit: {head} {rule} ({one_line(detail, max(budget, 20))}){more}"


def _prepare(args: argparse.Namespace) -> tuple[
        Registry, list[tuple[str, str | None]], Ruleset, Modes, Host, ScanOptions]:
    """Everything a scan needs before its rules run: the plugins, the outputs, the ruleset,
    the modes' inputs, the host and the options (bad input: UsageError)."""
    from aiaudit.core import plugins
    from aiaudit.core.host import Deadline, Host
    from aiaudit.core.scan import ScanOptions

    if not os.path.isdir(args.root):
        raise UsageError(f"--root {args.root}: not a directory")
    # the deadline runs from here: loading third-party plugins counts (core.scan.ScanOptions)
    deadline = Deadline(args.timeout or (PROLOG_TIMEOUT if args.prolog else DEFAULT_TIMEOUT))
    reg = plugins.registry(deadline)
    outputs = parse_outputs(args, reg.reporters, format_to_stdout=True)
    rs = load_ruleset(args.ruleset, only=args.only, skip=args.skip)
    ids = {r.id for r in rs.rules} | set(rs.disabled) | set(rs.unbound)
    for rid in [*args.only, *args.skip]:
        if rid not in ids:
            raise UsageError(f"unknown rule {rid!r} in ruleset {rs.name}")
    fail_on = Severity(args.fail_on or rs.settings.get("fail_on") or DEFAULT_FAIL_ON)
    user, user_source = resolve_user(args, dict(rs.settings))
    modes = mode_inputs(args)
    host = Host(args.root, live=args.live, deadline=deadline)
    if user:
        from aiaudit.linux.accounts.users import require_user

        require_user(host, user, user_source)
    opts = ScanOptions(
        user=user, user_source=user_source, only=tuple(args.only), skip=tuple(args.skip),
        timeout=modes.timeout, fail_on=fail_on, reraise=args.debug, waivers=modes.waivers,
        deadline=deadline,
        # the previous scan (--state/--changes-since) for rules that judge growth since it
        # (RDMA link flapping, kernel-log faults since the previous scan)
        settings={**rs.settings,
                  **({"previous": modes.previous} if modes.previous is not None else {})},
        image_kind=args.image_kind, kernel_cmdline=args.kernel_cmdline,
        **({"rule_timeout": args.rule_timeout} if args.rule_timeout else {}),
    )
    return reg, outputs, rs, modes, host, opts


def cmd_scan(args: argparse.Namespace) -> int:
    """``aiaudit scan``."""
    from aiaudit.core.scan import exit_status, scan

    started = time.monotonic()
    with loading():  # no cyclic collection while the scan loads (core.startup.collector)
        reg, outputs, rs, modes, host, opts = _prepare(args)
    fail_on = opts.fail_on
    run = scan(rs, host, opts)
    code = exit_status(run, fail_on, on_error=modes.on_error)
    # rendering and writing are bounded by the same deadline as the rules
    budget = max(started + modes.timeout - time.monotonic(), REPORT_MIN_S)
    try:
        with report_deadline(budget, "the reports were"):
            shown = _shown_run(run, modes)
            if emit(reg, shown, outputs, verbose=args.verbose, debug=args.debug,
                     sarif_category=args.sarif_category, pretty=args.pretty):
                code = ExitCode.USAGE
            code = _finish_modes(run, modes, fail_on, code)
            if args.syslog:
                code = _send_syslog(shown, args.syslog, code)
    except ReportDeadline:
        error(f"the reports were not finished by the deadline (--timeout "
               f"{modes.timeout:g} s, at least {REPORT_MIN_S:g} s after the rules)")
        return ExitCode.USAGE
    return code


def _send_syslog(run: RunResult, socket_path: str, code: int) -> int:
    """Send the run's events to syslog; on failure one message and exit code 2, unless the
    scan already exits 1 or 3 (that code says more about the host and is kept)."""
    from aiaudit.modes.syslog import SyslogError, send
    from aiaudit.reporters.events import events

    try:
        send(events(run), socket_path=socket_path)
    except SyslogError as exc:
        error(f"--syslog: {exc}")
        return code if code in (ExitCode.FAILED, ExitCode.NOT_EVALUATED) else ExitCode.USAGE
    return code
