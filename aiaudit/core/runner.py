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
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from aiaudit import __version__
from aiaudit.api import CheckContext
from aiaudit.core.errors import AuditError, HostError, ParseError
from aiaudit.core.host import Deadline, Host
from aiaudit.core.model import Finding, HostInfo, Result, RunResult, Severity, Status, Waiver
from aiaudit.core.records import record
from aiaudit.core.ruleset import Rule, Ruleset

if TYPE_CHECKING:
    from aiaudit.core.worker import Worker

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
    deadline: Deadline | None = None
    """The scan deadline if it is already running (the CLI starts it before loading
    plugins, so that their registration counts); else ``timeout`` from the scan's start."""


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


MAX_RESULTS = 10_000
"""Most results one rule may give (more is an ``error`` result: a check that yields
forever must not fill the scan's memory)."""


def _who(rule: Rule) -> str:
    """The check, and for a third-party check its plugin, as error results name it."""
    origin = rule.check.origin
    return f"check {rule.check.id}" + (f" of {origin}" if origin else "")


def run_rule(rule: Rule, ctx: CheckContext, *, reraise: bool = False) -> list[Result]:
    """Run one rule's check synchronously; whatever it raises or returns that is not
    results becomes one ``error`` result naming the check (and its plugin).

    ``SystemExit`` (``sys.exit``), ``KeyboardInterrupt`` and ``GeneratorExit`` raised by
    a check are the check's failure, not the scan's: rules run in worker threads or the
    worker process (:mod:`aiaudit.core.worker`), where a real Ctrl-C is never delivered as an
    exception (the main thread gets it; the worker process dies of it)."""
    try:
        got = rule.check.run(ctx)
        try:
            items = iter(got)
        except TypeError:
            return [error_result(f"{_who(rule)} returned {type(got).__name__}, not an "
                                 "iterable of results")]
        results = []
        for r in items:
            results.append(r)
            if len(results) > MAX_RESULTS:
                return [error_result(f"{_who(rule)} gave more than {MAX_RESULTS} "
                                     "results: stopped")]
    except (HostError, ParseError) as exc:
        return [error_result(str(exc))]
    except AuditError as exc:
        return [error_result(str(exc))]
    except Exception as exc:
        if reraise:
            raise
        return [error_result(f"internal error in {_who(rule)}: "
                             f"{type(exc).__name__}: {exc}")]
    except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
        what = "called sys.exit" if isinstance(exc, SystemExit) else "raised"
        return [error_result(f"{_who(rule)} {what} ({type(exc).__name__}"
                             + (f": {exc}" if str(exc) else "") + "): its rule is not "
                             "evaluated, the scan goes on")]
    if not results:
        return [error_result(f"{_who(rule)} produced no result")]
    bad = [r for r in results if not isinstance(r, Result) or r.status is Status.WAIVED]
    if bad:
        return [error_result(f"{_who(rule)} returned an invalid result: "
                             f"{_short_repr(bad[0])}")]
    return results


def _short_repr(obj: object, limit: int = 200) -> str:
    try:
        text = repr(obj)
    except Exception as exc:  # a hostile __repr__
        text = f"<{type(obj).__name__}: repr raised {type(exc).__name__}>"
    except BaseException:
        text = f"<{type(obj).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Batch:
    """A daemon thread that runs ``rules[first:]`` one after another, with what the caller
    needs to watch it: which rule runs, since when, with what budget.

    The caller does not hand each rule to a thread and wait for it (a thread wake-up per rule
    cost 0.1 ms, 7 ms of a 61-rule scan): it sleeps until the running rule's budget is spent
    or the batch ends.  A rule that overruns its budget keeps its thread (Python cannot kill
    one); the caller marks the batch abandoned, so that thread starts no further rule once
    the stuck one returns, and starts a new batch after the stuck rule.  Rule budgets are
    those of a rule-by-rule run: ``min(rule_timeout, what is left of the scan deadline)``,
    taken when the rule starts.
    """

    def __init__(self, rules: Sequence[Rule], first: int, make_ctx: Callable[[Rule], Any],
                 deadline: Deadline, rule_timeout: float, reraise: bool) -> None:
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.results: dict[int, list[Result]] = {}
        self.durations: dict[int, float] = {}
        """Seconds each finished rule took (JUnit ``testcase time``)."""
        self.index = first
        """The rule running (or about to); ``len(rules)`` once all have run."""
        self.started = time.monotonic()
        self.budget = rule_timeout
        self.capped = False
        """Whether the running rule's budget is what was left of the scan deadline."""
        self.deadline_at: int | None = None
        """Set when the scan deadline had passed before rule ``deadline_at`` could start."""
        self.error: BaseException | None = None
        self.abandoned = False
        self._args = (rules, make_ctx, deadline, rule_timeout, reraise)
        threading.Thread(target=self._loop, name="aiaudit-rules", daemon=True).start()

    def _loop(self) -> None:
        rules, make_ctx, deadline, rule_timeout, reraise = self._args
        try:
            for i in range(self.index, len(rules)):
                remaining = deadline.remaining()
                with self.lock:
                    if self.abandoned:
                        return
                    if remaining is not None and remaining <= 0:
                        self.deadline_at = i
                        return
                    self.index, self.started = i, time.monotonic()
                    self.capped = remaining is not None and remaining < rule_timeout
                    self.budget = remaining if self.capped else rule_timeout  # type: ignore[assignment]
                t_rule = time.monotonic()
                out = run_rule(rules[i], make_ctx(rules[i]), reraise=reraise)
                took = time.monotonic() - t_rule
                with self.lock:
                    if self.abandoned:
                        return
                    self.results[i] = out
                    self.durations[i] = took
            with self.lock:
                self.index = len(rules)
        except BaseException as exc:  # only with reraise: run_rule catches the rest
            self.error = exc
        finally:
            self.done.set()

    def watch(self) -> tuple[int, float, bool] | None:
        """Wait until the batch ends (``None``) or its running rule overruns its budget:
        then abandon the batch and return (that rule's index, its budget, capped)."""
        while True:
            with self.lock:
                index, started, budget, capped = (self.index, self.started, self.budget,
                                                  self.capped)
            if self.done.wait(max(0.0, started + budget - time.monotonic())):
                return None
            with self.lock:
                if (self.index == index and self.started == started
                        and index not in self.results and not self.done.is_set()):
                    self.abandoned = True
                    return index, budget, capped


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
    from aiaudit.core.identity import host_info as default_host_info

    started_wall = time.gmtime()  # UTC, as struct_time: no datetime import
    t0 = time.monotonic()
    deadline = options.deadline or Deadline(options.timeout)
    host.deadline = deadline
    rules = select_rules(ruleset, options.only, options.skip)
    findings: list[Finding] = []
    notices: list[str] = []
    settings = dict(options.settings)

    def make_ctx(rule: Rule) -> CheckContext:
        return CheckContext(host=host, params=rule.params, rule_id=rule.id, user=options.user,
                            user_source=options.user_source, settings=settings)

    results: dict[int, list[Result]] = {}
    durations: dict[int, float] = {}
    missed = 0
    isolated = [i for i, r in enumerate(rules) if r.check.origin]
    workers: list[Worker] = []
    if isolated:  # forked before the rule threads start: the child inherits no thread
        from aiaudit.core.worker import Worker

        workers.append(Worker(rules, isolated, make_ctx, run_rule, deadline,
                              options.rule_timeout, host.after_fork))
    try:
        local = [i for i, r in enumerate(rules) if not r.check.origin]
        missed += _run_local(rules, local, make_ctx, deadline, options, results,
                              durations)
        if workers:
            missed += _run_isolated(workers, rules, make_ctx, deadline, options, results,
                                    host.after_fork)
    finally:
        for w in workers:  # none outlives the scan (each is reaped by its reader)
            w.kill()
    if missed:
        notices.append(f"scan deadline of {options.timeout or 0:g}s reached; "
                       f"{missed} rule(s) not evaluated")
    for k, rule in enumerate(rules):
        findings.extend(_finding(rule, r) for r in results.get(k, ()))
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
        ruleset_source=ruleset.source,
        rules=tuple(r.info for r in rules),
        findings=tuple(findings),
        fail_on=options.fail_on,
        notices=tuple(notices),
        training_user=options.user,
        training_user_source=options.user_source,
        rule_durations={r.id: round(durations[k], 6) for k, r in enumerate(rules)
                        if k in durations},
    )


def _deadline_error(options: ScanOptions) -> Result:
    return error_result(f"not evaluated: scan deadline of {options.timeout or 0:g}s reached")


def _overrun_error(budget: float, capped: bool) -> Result:
    why = "scan deadline" if capped else "rule timeout"
    return error_result(f"not evaluated: {why} of {budget:.1f}s reached while "
                        f"the check was running (a read or command hung?)")


def _run_local(rules: Sequence[Rule], indices: Sequence[int],
               make_ctx: Callable[[Rule], CheckContext], deadline: Deadline,
               options: ScanOptions, results: dict[int, list[Result]],
               durations: dict[int, float]) -> int:
    """Run ``rules[i]`` for ``i`` in ``indices`` in thread batches (built-in checks) into
    ``results`` (and their run times into ``durations``); return how many the scan deadline
    left unevaluated."""
    sub = [rules[i] for i in indices]
    first = 0
    while first < len(sub):
        batch = _Batch(sub, first, make_ctx, deadline, options.rule_timeout, options.reraise)
        overrun = batch.watch()
        if batch.error is not None:
            raise batch.error
        with batch.lock:
            results.update((indices[k], v) for k, v in batch.results.items())
            durations.update((indices[k], v) for k, v in batch.durations.items())
        if overrun is None:
            if batch.deadline_at is not None:
                for k in range(batch.deadline_at, len(sub)):
                    results[indices[k]] = [_deadline_error(options)]
                return len(sub) - batch.deadline_at
            break
        index, budget, capped = overrun
        results[indices[index]] = [_overrun_error(budget, capped)]
        durations[indices[index]] = budget
        first = index + 1
    return 0


def _run_isolated(workers: list[Worker], rules: Sequence[Rule],
                  make_ctx: Callable[[Rule], CheckContext], deadline: Deadline,
                  options: ScanOptions, results: dict[int, list[Result]],
                  after_fork: Callable[[], None]) -> int:
    """Watch ``workers[-1]`` (third-party checks in a child process) into ``results``: a
    rule that overruns its budget gets an error result, the child is killed and a new one
    (appended to ``workers``) runs the rules after it; return how many the scan deadline
    left unevaluated."""
    from aiaudit.core.worker import Worker

    worker = workers[-1]
    while True:
        overrun = worker.watch()
        if overrun is not None and overrun[1] >= 0:
            worker.wait_ended()
        with worker.lock:
            results.update(worker.results)
            deadline_at = worker.deadline_at
        if overrun is None:
            if deadline_at is None:
                lost = [i for i in worker.indices if i not in results]
                if lost:  # the child ended between rules: its rules are not evaluated
                    why = worker.describe_end()
                    for i in lost:
                        results[i] = [error_result(f"not evaluated: {why}")]
                return 0
            rest = [i for i in worker.indices if i >= deadline_at and i not in results]
            for i in rest:
                results[i] = [_deadline_error(options)]
            return len(rest)
        index, budget, capped = overrun
        if capped and budget <= 0:  # the deadline passed between two rules
            results[index] = [_deadline_error(options)]
        elif budget < 0:
            results[index] = [error_result(
                f"{_who(rules[index])}: {worker.describe_end()} while the check was "
                "running; its rule is not evaluated")]
        else:
            results[index] = [error_result(f"{_who(rules[index])}: "
                                           + _overrun_error(budget, capped).message)]
        rest = worker.pending_after(index)
        if not rest:
            return 0
        if deadline.expired():
            for i in rest:
                results[i] = [_deadline_error(options)]
            return len(rest)
        worker = Worker(rules, rest, make_ctx, run_rule, deadline, options.rule_timeout,
                        after_fork)
        workers.append(worker)


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
    """Exit code for a finished scan (see :class:`aiaudit.core.errors.ExitCode`).

    Failures at or above ``fail_on`` give 1.  Otherwise errors ("could not evaluate") at
    or above it give 3, 1 or 0 by ``on_error`` (see :data:`ON_ERROR_CHOICES`);
    ``error_code_on_unevaluated=False`` is the older spelling of ``on_error="pass"``.
    """
    from aiaudit.core.errors import ExitCode

    at_or_above = [f for f in run.findings if f.severity.rank >= fail_on.rank]
    if any(f.status is Status.FAIL for f in at_or_above):
        return ExitCode.FAILED
    if not error_code_on_unevaluated or on_error == "pass":
        return ExitCode.OK
    if any(f.status is Status.ERROR for f in at_or_above):
        return ExitCode.FAILED if on_error == "fail" else ExitCode.NOT_EVALUATED
    return ExitCode.OK
