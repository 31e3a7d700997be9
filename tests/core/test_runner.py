"""The runner: isolation of raising and hanging checks, deadlines, exit status."""

from __future__ import annotations

import re
import threading
import time
from typing import Iterator

import pytest

from aiaudit.api import CheckContext, CheckSpec
from aiaudit.core.errors import ExitCode, NotFound
from aiaudit.core.host import Host
from aiaudit.core.model import HostInfo, Result, RuleInfo, Severity, Status
from aiaudit.core.ruleset import Rule, Ruleset
from aiaudit.core.scan import ScanOptions, exit_status, scan

RELEASE = threading.Event()
"""Set at module teardown so hung check threads end."""


@pytest.fixture(autouse=True, scope="module")
def _release_hung_threads():
    yield
    RELEASE.set()


def _ok(ctx: CheckContext) -> Iterator[Result]:
    yield Result(Status.PASS, "ok", "fine")


def _fail(ctx: CheckContext) -> Iterator[Result]:
    yield Result(Status.FAIL, "bad", "not fine")


def _raise(ctx: CheckContext) -> Iterator[Result]:
    yield Result(Status.PASS, "first", "a result before the crash is discarded")
    raise KeyError("boom")


def _host_error(ctx: CheckContext) -> Iterator[Result]:
    ctx.host.read_text("/etc/missing")
    yield Result(Status.PASS, "x", "unreachable")


def _hang(ctx: CheckContext) -> Iterator[Result]:
    RELEASE.wait(30)
    yield Result(Status.PASS, "late", "too late")


def _nothing(ctx: CheckContext) -> Iterator[Result]:
    return iter(())


def _invalid(ctx: CheckContext) -> Iterator[Result]:
    yield "not a result"  # type: ignore[misc]


def _rule(rid: str, fn, severity: Severity = Severity.HIGH) -> Rule:
    spec = CheckSpec(id=f"test.{fn.__name__.strip('_')}", title=rid, run=fn)
    return Rule(RuleInfo(rid, spec.id, severity, rid), spec, {})


def _ruleset(*rules: Rule) -> Ruleset:
    return Ruleset("t", "1", "", tuple(rules))


def _info(host: Host) -> HostInfo:
    return HostInfo("h", None, None, None, None, None, host.root, host.mode)


def _scan(tmp_path, *rules: Rule, **opts):
    return scan(_ruleset(*rules), Host(str(tmp_path)), ScanOptions(**opts), host_info=_info)


def _by_rule(run) -> dict[str, list[Result]]:
    out: dict[str, list[Result]] = {}
    for f in run.findings:
        out.setdefault(f.rule_id, []).append(f.result)
    return out


def test_raising_check_is_an_error_and_others_run(tmp_path) -> None:
    run = _scan(tmp_path, _rule("A", _ok), _rule("B", _raise), _rule("C", _host_error),
                _rule("D", _ok))
    got = _by_rule(run)
    assert [r.status for r in got["B"]] == [Status.ERROR]
    assert "internal error in check test.raise: KeyError" in got["B"][0].message
    assert got["C"][0].status is Status.ERROR and "/etc/missing" in got["C"][0].message
    assert got["A"][0].status is got["D"][0].status is Status.PASS
    assert exit_status(run, Severity.HIGH) == ExitCode.NOT_EVALUATED


def test_reraise_for_debugging(tmp_path) -> None:
    with pytest.raises(KeyError):
        _scan(tmp_path, _rule("B", _raise), reraise=True)
    run = _scan(tmp_path, _rule("C", _host_error), reraise=True)  # expected errors stay results
    assert run.findings[0].status is Status.ERROR


def test_empty_and_invalid_results_are_errors(tmp_path) -> None:
    got = _by_rule(_scan(tmp_path, _rule("E", _nothing), _rule("I", _invalid)))
    assert "produced no result" in got["E"][0].message
    assert "invalid result" in got["I"][0].message


def test_hanging_check_abandoned_at_rule_timeout(tmp_path) -> None:
    t0 = time.monotonic()
    run = _scan(tmp_path, _rule("A", _ok), _rule("H", _hang), _rule("C", _fail),
                rule_timeout=0.3)
    took = time.monotonic() - t0
    # a deadline test, so wall time: the 0.3 s rule timeout must end the wait for a check
    # that blocks 30 s; generous for a loaded machine, far below the hang
    assert 0.3 <= took < 10, took
    got = _by_rule(run)
    assert got["H"][0].status is Status.ERROR and "rule timeout of 0.3s" in got["H"][0].message
    assert got["C"][0].status is Status.FAIL  # the third check still ran
    assert exit_status(run, Severity.HIGH) == ExitCode.FAILED


def test_scan_deadline_holds_when_a_check_hangs(tmp_path) -> None:
    t0 = time.monotonic()
    # 2 s: time enough for A to run first even on a loaded machine
    run = _scan(tmp_path, _rule("A", _ok), _rule("H", _hang), _rule("C", _ok), timeout=2)
    took = time.monotonic() - t0
    # a deadline test, so wall time: the 2 s scan deadline must end the wait for a check
    # that blocks 30 s (the 20 s rule timeout would otherwise); generous for a loaded machine
    assert 2 <= took < 12, took
    got = _by_rule(run)
    assert got["A"][0].status is Status.PASS
    # the budget H got: what was left of the deadline when it started (a little less
    # than 2 s on a loaded machine), never the 20 s rule timeout
    assert re.search(r"scan deadline of (2|2\.0|1\.\d)s", got["H"][0].message), \
        got["H"][0].message
    assert got["C"][0].status is Status.ERROR and "not evaluated" in got["C"][0].message
    assert any("deadline" in n for n in run.notices)
    assert run.duration_s < 12  # the scan's own clock: the same deadline, as generous


def test_exit_status_thresholds(tmp_path) -> None:
    run = _scan(tmp_path, _rule("F", _fail, Severity.LOW), _rule("E", _raise, Severity.MEDIUM))
    assert exit_status(run, Severity.INFO) == ExitCode.FAILED
    assert exit_status(run, Severity.MEDIUM) == ExitCode.NOT_EVALUATED
    assert exit_status(run, Severity.HIGH) == ExitCode.OK


def test_run_result_fields(tmp_path) -> None:
    run = _scan(tmp_path, _rule("A", _ok), _rule("F", _fail), only=("F",))
    assert [f.rule_id for f in run.findings] == ["F"]
    assert [r.id for r in run.rules] == ["F"]
    assert run.started.endswith("Z") and run.ruleset == "t"
    assert run.counts()["fail"] == 1 and run.counts()["pass"] == 0


def test_host_errors_are_not_internal(tmp_path) -> None:
    def boom(ctx):
        raise NotFound("/etc/x: no such file")

    got = _by_rule(_scan(tmp_path, _rule("N", boom)))
    assert got["N"][0].message == "/etc/x: no such file"


def _thread_name(ctx: CheckContext) -> Iterator[Result]:
    yield Result(Status.PASS, threading.current_thread().name + f"#{threading.get_ident()}",
                 "which thread ran me")


def test_rules_share_one_worker_until_one_hangs(tmp_path) -> None:
    run = _scan(tmp_path, _rule("A", _thread_name), _rule("B", _thread_name),
                _rule("H", _hang), _rule("C", _thread_name), _rule("D", _thread_name),
                rule_timeout=0.2)
    got = {rid: rs[0].subject for rid, rs in _by_rule(run).items()}
    assert got["A"] == got["B"], "consecutive rules run on the same worker thread"
    assert got["C"] == got["D"] and got["C"] != got["A"], "a new worker after the hung rule"
    assert got["A"].startswith("aiaudit-rules#")
    assert threading.current_thread().name not in got["A"], "rules never run on the caller"


def test_run_id_is_a_random_version_4_uuid(tmp_path) -> None:
    import uuid

    ids = {_scan(tmp_path, _rule("A", _ok)).run_id for _ in range(20)}
    assert len(ids) == 20
    for rid in ids:
        u = uuid.UUID(rid)
        assert str(u) == rid and u.version == 4 and u.variant == uuid.RFC_4122


COUNT: list[str] = []
SLOW_DONE = threading.Event()
"""Set by the test (at the latest, :func:`_slow` returns after 30 s)."""


def _slow(ctx: CheckContext) -> Iterator[Result]:
    SLOW_DONE.wait(30)
    yield Result(Status.PASS, "slow", "returned after its budget")


@pytest.fixture
def slow_checks() -> Iterator[threading.Event]:
    """:func:`_slow` blocks until the test sets the event (or 30 s: longer than any budget
    here, so a runner that waited for it would show far outside a generous bound)."""
    SLOW_DONE.clear()
    yield SLOW_DONE
    SLOW_DONE.set()


def _count(ctx: CheckContext) -> Iterator[Result]:
    COUNT.append(threading.current_thread().name)
    yield Result(Status.PASS, "n", "counted")


def test_overrun_rules_each_get_their_budget_and_the_rest_runs_once(tmp_path,
                                                                    slow_checks) -> None:
    COUNT.clear()
    t0 = time.monotonic()
    run = _scan(tmp_path, _rule("S1", _slow), _rule("S2", _slow), _rule("N", _count),
                rule_timeout=0.2)
    took = time.monotonic() - t0
    # a deadline test, so wall time: each slow check gets its own 0.2 s budget, and the
    # runner does not wait the 30 s they block; generous for a loaded machine
    assert 0.4 <= took < 5, took
    got = _by_rule(run)
    for rid in ("S1", "S2"):
        assert got[rid][0].status is Status.ERROR and "rule timeout of 0.2s" in got[rid][0].message
    assert got["N"][0].status is Status.PASS
    slow_checks.set()  # both slow checks return now: their threads must not go on
    time.sleep(0.5)
    assert len(COUNT) == 1, COUNT


def test_rule_budget_is_capped_by_the_scan_deadline(tmp_path, slow_checks) -> None:
    run = _scan(tmp_path, _rule("A", _ok), _rule("S", _slow), _rule("N", _ok),
                rule_timeout=20, timeout=0.25)
    got = _by_rule(run)
    # what is left of the 0.25 s deadline when S starts (less on a loaded machine)
    assert re.search(r"scan deadline of 0\.\d+s", got["S"][0].message), got["S"][0].message
    assert got["N"][0].status is Status.ERROR and "not evaluated" in got["N"][0].message
    # a deadline test (the scan's own clock): the 0.25 s deadline, not the 20 s rule budget
    # nor the 30 s the check blocks; generous for a loaded machine
    assert run.duration_s < 5


# ------------------------------------------------------------------ plugins' misbehaviour
def _isolated(rid: str, fn) -> Rule:
    """A rule whose check comes from a third-party plugin (runs in the worker process)."""
    spec = CheckSpec(id=f"test.{fn.__name__.strip('_')}", title=rid, run=fn,
                     origin="plugin 'p' (distribution p 1)")
    return Rule(RuleInfo(rid, spec.id, Severity.HIGH, rid), spec, {})


def _spin(ctx: CheckContext) -> Iterator[Result]:
    while True:
        pass
    yield  # pragma: no cover


def _kbint(ctx: CheckContext) -> Iterator[Result]:
    raise KeyboardInterrupt
    yield  # pragma: no cover


def _none(ctx: CheckContext):
    return None


def _endless(ctx: CheckContext) -> Iterator[Result]:
    while True:
        yield Result(Status.PASS, "x", "again")


def test_base_exceptions_and_wrong_types_in_threads_are_errors(tmp_path) -> None:
    got = _by_rule(_scan(tmp_path, _rule("K", _kbint), _rule("N", _none),
                         _rule("F", _endless), _rule("A", _ok)))
    assert "raised (KeyboardInterrupt)" in got["K"][0].message
    assert "returned NoneType, not an iterable of results" in got["N"][0].message
    assert "more than 10000 results" in got["F"][0].message
    assert got["A"][0].status is Status.PASS


def test_worker_is_killed_at_the_rule_timeout_and_replaced(tmp_path) -> None:
    t0 = time.monotonic()
    run = _scan(tmp_path, _isolated("S1", _spin), _rule("B", _ok), _isolated("S2", _spin),
                _isolated("A", _ok), rule_timeout=0.5, timeout=60)
    got = _by_rule(run)
    for rid in ("S1", "S2"):
        assert got[rid][0].status is Status.ERROR
        assert "plugin 'p'" in got[rid][0].message and "rule timeout of 0.5s" in \
            got[rid][0].message
    assert got["A"][0].status is got["B"][0].status is Status.PASS
    # a deadline test, so wall time: the 0.5 s rule timeout must kill each spinning worker
    # (or the scan would run to its 60 s deadline); generous for a loaded machine
    assert time.monotonic() - t0 < 20


def test_worker_holds_the_scan_deadline(tmp_path) -> None:
    t0 = time.monotonic()
    run = _scan(tmp_path, _isolated("S", _spin), _isolated("A", _ok), rule_timeout=20,
                timeout=0.6)
    got = _by_rule(run)
    assert "scan deadline" in got["S"][0].message
    assert "scan deadline" in got["A"][0].message
    assert any("1 rule(s) not evaluated" in n for n in run.notices), run.notices
    # a deadline test, so wall time: the 0.6 s scan deadline, not the 20 s rule timeout,
    # must stop the spinning worker; generous for a loaded machine
    assert time.monotonic() - t0 < 10


def test_exit_codes_are_the_documented_ones() -> None:
    """Every code the command line returns (README, "Exit codes")."""
    assert {c.name: int(c) for c in ExitCode} == {
        "OK": 0, "FAILED": 1, "USAGE": 2, "NOT_EVALUATED": 3, "INTERNAL": 4, "BAD_INPUT": 5,
        "INTERRUPTED": 130}
