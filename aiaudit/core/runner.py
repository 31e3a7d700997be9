# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""The runner: each rule in isolation, under a deadline.

Every rule runs in its own daemon thread so that a check that hangs (a stuck read on a
network filesystem, a command that ignores signals) costs at most its time budget: the
runner stops waiting at the rule timeout or the scan deadline, records an ``error`` result
and moves on.  A check that raises becomes an ``error`` result with the message; the scan
goes on (checkov's ``run_check`` isolation).  So does a check that yields something that
is not a well-formed result (:mod:`aiaudit.core.wellformed`): no reporter ever sees it.
Third-party checks run in a worker process the runner can kill (:mod:`aiaudit.core.worker`).

:func:`aiaudit.core.scan.scan` calls :func:`run_rules` and makes a RunResult of what it gives.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

from aiaudit.api import CheckContext
from aiaudit.core.errors import AuditError
from aiaudit.core.host import Deadline
from aiaudit.core.model import Result, error_result
from aiaudit.core.ruleset import Rule
from aiaudit.core.startup.records import record
from aiaudit.core.wellformed import MAX_RESULTS, result_problem

if TYPE_CHECKING:
    from aiaudit.core.worker import Worker

DEFAULT_RULE_TIMEOUT = 20.0
"""Seconds one rule may take before it is abandoned with an error result."""


def _who(rule: Rule) -> str:
    """The check, and for a third-party check its plugin, as error results name it."""
    origin = rule.check.origin
    return f"check {rule.check.id}" + (f" of {origin}" if origin else "")


def run_rule(rule: Rule, ctx: CheckContext, *, reraise: bool = False) -> list[Result]:
    """Run one rule's check synchronously; whatever it raises or returns that is not
    well-formed results becomes one ``error`` result naming the rule and the check (and
    its plugin), and what was wrong.

    ``SystemExit`` (``sys.exit``), ``KeyboardInterrupt`` and ``GeneratorExit`` raised by
    a check are the check's failure, not the scan's: rules run in worker threads or the
    worker process (:mod:`aiaudit.core.worker`), where a real Ctrl-C is never delivered as an
    exception (the main thread gets it; the worker process dies of it)."""
    try:
        results = _collect(rule, ctx)
    except AuditError as exc:  # HostError, ParseError...: the host, not the check
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
    if isinstance(results, str):
        return [error_result(results)]
    if not results:
        return [error_result(f"{_who(rule)} produced no result")]
    for r in results:
        problem = result_problem(r)
        if problem is not None:
            return [error_result(f"rule {rule.id}: {_who(rule)} returned an invalid "
                                 f"result: {problem}: {_short_repr(r)}")]
    return results


def _collect(rule: Rule, ctx: CheckContext) -> list[Any] | str:
    """What ``rule``'s check yields, as a list (at most :data:`MAX_RESULTS` items), or the
    message of the error result when it returns no iterable or yields too much."""
    got = rule.check.run(ctx)
    try:
        items = iter(got)
    except TypeError:
        return (f"{_who(rule)} returned {type(got).__name__}, not an iterable of "
                "results")
    results = []
    for r in items:
        results.append(r)
        if len(results) > MAX_RESULTS:
            return f"{_who(rule)} gave more than {MAX_RESULTS} results: stopped"
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
                    self.budget = remaining if remaining is not None and self.capped \
                        else rule_timeout
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


def _deadline_error(timeout: float | None) -> Result:
    return error_result(f"not evaluated: scan deadline of {timeout or 0:g}s reached")


def _overrun_error(budget: float, capped: bool) -> Result:
    why = "scan deadline" if capped else "rule timeout"
    return error_result(f"not evaluated: {why} of {budget:.1f}s reached while "
                        f"the check was running (a read or command hung?)")


@record
class Ran:
    """What running the rules gave, by index in the list of rules."""

    results: dict[int, list[Result]]
    """The results of each rule (an error result for one that could not be evaluated)."""
    durations: dict[int, float]
    """Seconds each rule's check ran (a rule stopped at its budget: the budget; a rule the
    deadline left out: absent)."""
    missed: int
    """How many rules the scan deadline left unevaluated."""


def run_rules(rules: Sequence[Rule], make_ctx: Callable[[Rule], CheckContext],
              deadline: Deadline, *, timeout: float | None = None,
              rule_timeout: float = DEFAULT_RULE_TIMEOUT, reraise: bool = False,
              after_fork: Callable[[], None] | None = None) -> Ran:
    """Run every rule, each with the context ``make_ctx`` gives it, within ``deadline``
    (``timeout``: its length in seconds, for messages) and ``rule_timeout`` each:
    built-in checks in threads, third-party ones in a worker process (forked first, with
    ``after_fork`` run in the child).  ``reraise``: an unexpected exception of a built-in
    check propagates (tests and ``--debug``)."""
    run = _Rules(rules, make_ctx, deadline, timeout, rule_timeout, reraise, after_fork)
    isolated = [i for i, r in enumerate(rules) if r.check.origin]
    workers: list[Worker] = []
    if isolated:  # forked before the rule threads start: the child inherits no thread
        workers.append(run.worker(isolated))
    try:
        missed = run.local([i for i, r in enumerate(rules) if not r.check.origin])
        if workers:
            missed += run.isolated(workers)
    finally:
        for w in workers:  # none outlives the scan (each is reaped by its reader)
            w.kill()
    return Ran(run.results, run.durations, missed)


class _Rules:
    """One run of rules: what every batch and worker needs, and what they gave."""

    def __init__(self, rules: Sequence[Rule], make_ctx: Callable[[Rule], CheckContext],
                 deadline: Deadline, timeout: float | None, rule_timeout: float,
                 reraise: bool, after_fork: Callable[[], None] | None) -> None:
        self.rules = rules
        self.make_ctx = make_ctx
        self.deadline = deadline
        self.timeout = timeout
        self.rule_timeout = rule_timeout
        self.reraise = reraise
        self.after_fork = after_fork
        self.results: dict[int, list[Result]] = {}
        self.durations: dict[int, float] = {}

    def worker(self, indices: Sequence[int]) -> Worker:
        """A new worker process running ``rules[i]`` for ``i`` in ``indices``."""
        from aiaudit.core.worker import Worker

        return Worker(self.rules, indices, self.make_ctx, run_rule, self.deadline,
                      self.rule_timeout, self.after_fork)

    def not_evaluated(self, indices: Sequence[int]) -> int:
        """Give each of ``indices`` the deadline's error result; return how many."""
        for i in indices:
            self.results[i] = [_deadline_error(self.timeout)]
        return len(indices)

    def local(self, indices: Sequence[int]) -> int:
        """Run ``rules[i]`` for ``i`` in ``indices`` in thread batches (built-in checks);
        return how many the scan deadline left unevaluated."""
        sub = [self.rules[i] for i in indices]
        first = 0
        while first < len(sub):
            batch = _Batch(sub, first, self.make_ctx, self.deadline, self.rule_timeout,
                           self.reraise)
            overrun = batch.watch()
            if batch.error is not None:
                raise batch.error
            with batch.lock:
                self.results.update((indices[k], v) for k, v in batch.results.items())
                self.durations.update((indices[k], v) for k, v in batch.durations.items())
            if overrun is None:
                if batch.deadline_at is not None:
                    return self.not_evaluated(indices[batch.deadline_at:])
                break
            index, budget, capped = overrun
            self.results[indices[index]] = [_overrun_error(budget, capped)]
            self.durations[indices[index]] = budget
            first = index + 1
        return 0

    def isolated(self, workers: list[Worker]) -> int:
        """Watch ``workers[-1]`` (third-party checks in a child process): a rule that
        overruns its budget gets an error result, the child is killed and a new one
        (appended to ``workers``) runs the rules after it; return how many the scan deadline
        left unevaluated."""
        worker = workers[-1]
        while True:
            overrun = worker.watch()
            if overrun is not None and overrun[1] >= 0:
                worker.wait_ended()
            with worker.lock:
                self.results.update(worker.results)
                deadline_at = worker.deadline_at
            if overrun is None:
                return self._ended(worker, deadline_at)
            index, budget, capped = overrun
            self.results[index] = [self._overrun(worker, index, budget, capped)]
            rest = worker.pending_after(index)
            if not rest:
                return 0
            if self.deadline.expired():
                return self.not_evaluated(rest)
            worker = self.worker(rest)
            workers.append(worker)

    def _ended(self, worker: Worker, deadline_at: int | None) -> int:
        """Error results for the rules of a worker that ended without an overrun: those
        after the deadline, or (the child ended between rules) every one it left."""
        if deadline_at is not None:
            return self.not_evaluated([i for i in worker.indices
                                       if i >= deadline_at and i not in self.results])
        lost = [i for i in worker.indices if i not in self.results]
        if lost:  # the child ended between rules: its rules are not evaluated
            why = worker.describe_end()
            for i in lost:
                self.results[i] = [error_result(f"not evaluated: {why}")]
        return 0

    def _overrun(self, worker: Worker, index: int, budget: float, capped: bool) -> Result:
        """The error result of the rule a worker was running when it overran its budget
        (``budget < 0``: the worker ended while running it)."""
        if capped and budget <= 0:  # the deadline passed between two rules
            return _deadline_error(self.timeout)
        who = _who(self.rules[index])
        if budget < 0:
            return error_result(f"{who}: {worker.describe_end()} while the check was "
                                "running; its rule is not evaluated")
        return error_result(f"{who}: " + _overrun_error(budget, capped).message)
