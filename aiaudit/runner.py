"""The runner: each rule in isolation, under a deadline, then waivers.

Every rule runs in its own daemon thread so that a check that hangs (a stuck read on a
network filesystem, a command that ignores signals) costs at most its time budget: the
runner stops waiting at the rule timeout or the scan deadline, records an ``error`` result
and moves on.  A check that raises becomes an ``error`` result with the message; the scan
goes on (checkov's ``run_check`` isolation).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import field, replace
from typing import Any, Callable, Mapping, Sequence

from aiaudit import __version__
from aiaudit.api import CheckContext
from aiaudit.errors import AuditError, HostError, ParseError
from aiaudit.host import Deadline, Host
from aiaudit.model import (
    Finding,
    HostInfo,
    Result,
    RunResult,
    Severity,
    Status,
    Waiver,
)
from aiaudit.records import record
from aiaudit.ruleset import Rule, Ruleset

DEFAULT_RULE_TIMEOUT = 20.0
"""Seconds one rule may take before it is abandoned with an error result."""


@record
class ScanOptions:
    """How to run a scan (everything the command line decides)."""

    user: str | None = None
    user_source: str | None = None
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    timeout: float | None = None
    """Deadline for the whole scan, in seconds."""
    rule_timeout: float = DEFAULT_RULE_TIMEOUT
    fail_on: Severity = Severity.HIGH
    waivers: tuple[Waiver, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    reraise: bool = False
    """Re-raise unexpected check exceptions (tests and ``--debug``)."""
    today: str | None = None
    """Date used for waiver expiry (``YYYY-MM-DD``); today in UTC when ``None``."""


@record(frozen=False)
class _Slot:
    """Where a rule's worker leaves its results (or the exception, with ``reraise``)."""

    results: list[Result] | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


def select_rules(ruleset: Ruleset, only: Sequence[str], skip: Sequence[str]) -> list[Rule]:
    """The rules to run after ``--only`` / ``--skip`` (ids must exist: caller validates)."""
    rules = list(ruleset.rules)
    if only:
        wanted = set(only)
        rules = [r for r in rules if r.id in wanted]
    if skip:
        unwanted = set(skip)
        rules = [r for r in rules if r.id not in unwanted]
    return rules


def error_result(message: str, subject: str = "-") -> Result:
    """An ``error`` result (the rule could not be evaluated)."""
    return Result(status=Status.ERROR, subject=subject, message=message)


def run_rule(rule: Rule, ctx: CheckContext, *, reraise: bool = False) -> list[Result]:
    """Run one rule's check synchronously; exceptions become one ``error`` result."""
    try:
        results = list(rule.check.run(ctx))
    except (HostError, ParseError) as exc:
        return [error_result(str(exc))]
    except AuditError as exc:
        return [error_result(str(exc))]
    except Exception as exc:
        if reraise:
            raise
        return [error_result(f"internal error in check {rule.check.id}: "
                             f"{type(exc).__name__}: {exc}")]
    if not results:
        return [error_result(f"check {rule.check.id} produced no result")]
    bad = [r for r in results if not isinstance(r, Result) or r.status is Status.WAIVED]
    if bad:
        return [error_result(f"check {rule.check.id} returned an invalid result: {bad[0]!r}")]
    return results


class _Worker:
    """One daemon thread that runs rules one after another.

    Starting a thread per rule cost about 0.15 ms a rule (61 rules: 10 ms of a scan).  A rule
    that overruns its budget keeps its worker (Python cannot kill a thread); the runner
    then abandons that worker and starts a new one for the next rule, so a hung read or
    command never delays the rules after it beyond their own budgets.
    """

    def __init__(self) -> None:
        self._job: Callable[[], None] | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._loop, name="aiaudit-rules", daemon=True).start()

    def _loop(self) -> None:
        while True:
            self._ready.wait()
            self._ready.clear()
            job, self._job = self._job, None
            if job is not None:
                job()

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` on this worker (one job at a time: the caller waits for it)."""
        self._job = job
        self._ready.set()


def _run_isolated(rule: Rule, ctx: CheckContext, budget: float | None, reraise: bool,
                  worker: _Worker) -> tuple[list[Result], bool]:
    """Run ``rule`` on ``worker``; returns (results, finished_in_time)."""
    slot = _Slot()

    def job() -> None:
        try:
            slot.results = run_rule(rule, ctx, reraise=reraise)
        except BaseException as exc:  # only with reraise
            slot.error = exc
        finally:
            slot.done.set()

    worker.submit(job)
    finished = slot.done.wait(budget)
    if not finished:
        return [], False
    if slot.error is not None:
        raise slot.error
    return slot.results or [], True


def apply_waivers(findings: list[Finding], waivers: Sequence[Waiver], host: HostInfo,
                  today: str, rule_ids: Sequence[str] | None = None
                  ) -> tuple[list[Finding], list[str]]:
    """Attach the first matching, unexpired waiver to each failure; return notices.

    Only ``fail`` results are waived (an ``error`` means "could not look" and is never
    hidden).  A waiver applies through its ``expires`` day (``today`` is ``YYYY-MM-DD``).
    Notices name, with the waiver's file:line:col: every expired waiver (and how many
    failures it no longer covers), every waiver whose rule pattern matches none of
    ``rule_ids`` (a typo or a removed rule), and every waiver that matched no failure
    (stale).  A waiver whose ``host`` pattern does not match this host is silent here: one
    waiver file serves a fleet.
    """
    from fnmatch import fnmatchcase

    def host_ok(w: Waiver) -> bool:
        return w.host is None or fnmatchcase(host.hostname, w.host)

    used: set[int] = set()
    uncovered: dict[int, int] = {}
    expired = {i for i, w in enumerate(waivers) if w.expires < today}
    out = []
    for f in findings:
        if f.result.status is not Status.FAIL:
            out.append(f)
            continue
        applied = None
        for i, w in enumerate(waivers):
            if not (fnmatchcase(f.rule_id, w.rule) and host_ok(w)
                    and (w.subject is None or fnmatchcase(f.result.subject, w.subject))):
                continue
            if i in expired:
                uncovered[i] = uncovered.get(i, 0) + 1
                continue
            used.add(i)
            applied = w
            break
        out.append(replace(f, waiver=applied) if applied else f)
    notices: list[str] = []
    for i, w in enumerate(waivers):
        what = f"waiver for {w.rule}" + (f" subject {w.subject}" if w.subject else "")
        where = f" ({w.source})" if w.source else ""
        if not host_ok(w):
            continue
        if i in expired:
            n = uncovered.get(i, 0)
            notices.append(f"{what} expired on {w.expires}{where}: it no longer applies"
                           + (f" ({n} failure(s) no longer waived)" if n else ""))
        elif rule_ids is not None and not any(fnmatchcase(r, w.rule) for r in rule_ids):
            notices.append(f"{what} matches no rule of this scan{where}: "
                           "fix the rule id or remove it")
        elif i not in used:
            notices.append(f"{what} matched no failure{where}: remove it if stale")
    return out, notices


def scan(ruleset: Ruleset, host: Host, options: ScanOptions,
         host_info: Callable[[Host], HostInfo] | None = None) -> RunResult:
    """Run every selected rule of ``ruleset`` against ``host`` and collect a RunResult."""
    from aiaudit.identity import host_info as default_host_info

    started_wall = time.gmtime()  # UTC, as struct_time: no datetime import
    t0 = time.monotonic()
    deadline = Deadline(options.timeout)
    host.deadline = deadline
    rules = select_rules(ruleset, options.only, options.skip)
    findings: list[Finding] = []
    notices: list[str] = []
    settings = dict(options.settings)
    worker = _Worker()
    for idx, rule in enumerate(rules):
        ctx = CheckContext(host=host, params=rule.params, rule_id=rule.id, user=options.user,
                           user_source=options.user_source, settings=settings)
        remaining = deadline.remaining()
        if remaining is not None and remaining <= 0:
            missed = [r.id for r in rules[idx:]]
            notices.append(f"scan deadline of {options.timeout:g}s reached; "
                           f"{len(missed)} rule(s) not evaluated")
            for r in rules[idx:]:
                findings.append(_finding(r, error_result(
                    f"not evaluated: scan deadline of {options.timeout:g}s reached")))
            break
        budget = options.rule_timeout if remaining is None else min(options.rule_timeout,
                                                                     remaining)
        results, in_time = _run_isolated(rule, ctx, budget, options.reraise, worker)
        if not in_time:
            worker = _Worker()  # the old one is stuck in the rule: abandon it
            why = ("scan deadline" if remaining is not None and budget == remaining
                   else "rule timeout")
            results = [error_result(f"not evaluated: {why} of {budget:.1f}s reached while "
                                    f"the check was running (a read or command hung?)")]
        findings.extend(_finding(rule, r) for r in results)
    info = (host_info or default_host_info)(host)
    today = options.today or time.strftime("%Y-%m-%d", started_wall)
    findings, wnotices = apply_waivers(findings, options.waivers, info, today,
                                       [r.id for r in rules])
    notices.extend(wnotices)
    return RunResult(
        tool_version=__version__,
        run_id=random_uuid(),
        started=time.strftime("%Y-%m-%dT%H:%M:%SZ", started_wall),
        duration_s=round(time.monotonic() - t0, 4),
        host=info,
        ruleset=ruleset.name,
        ruleset_version=ruleset.version,
        rules=tuple(r.info for r in rules),
        findings=tuple(findings),
        fail_on=options.fail_on,
        notices=tuple(notices),
    )


def random_uuid() -> str:
    """A random (version 4, RFC 4122) UUID string, as ``str(uuid.uuid4())`` gives, without
    importing :mod:`uuid` (which imports :mod:`platform`: 4 ms of a prolog's start-up)."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # variant RFC 4122
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _finding(rule: Rule, result: Result) -> Finding:
    return Finding(rule_id=rule.id, check=rule.check.id, severity=rule.info.severity,
                   title=rule.info.title, result=result)


ON_ERROR_CHOICES = ("code", "fail", "pass")
"""What an ``error`` result at or above the threshold does to the exit code: ``code`` exits
3 (NOT_EVALUATED), ``fail`` exits 1 as a failure would, ``pass`` ignores it (exit 0)."""


def exit_status(run: RunResult, fail_on: Severity, *, error_code_on_unevaluated: bool = True,
                on_error: str = "code") -> int:
    """Exit code for a finished scan (see :class:`aiaudit.errors.ExitCode`).

    Failures at or above ``fail_on`` give 1.  Otherwise errors ("could not evaluate") at
    or above it give 3, 1 or 0 by ``on_error`` (see :data:`ON_ERROR_CHOICES`);
    ``error_code_on_unevaluated=False`` is the older spelling of ``on_error="pass"``.
    """
    from aiaudit.errors import ExitCode

    at_or_above = [f for f in run.findings if f.severity.rank >= fail_on.rank]
    if any(f.status is Status.FAIL for f in at_or_above):
        return ExitCode.FAILED
    if not error_code_on_unevaluated or on_error == "pass":
        return ExitCode.OK
    if any(f.status is Status.ERROR for f in at_or_above):
        return ExitCode.FAILED if on_error == "fail" else ExitCode.NOT_EVALUATED
    return ExitCode.OK
