"""``infiniband.link_errors``: counters growing since the previous scan are flapping."""

from __future__ import annotations

from aiaudit.core.model import Finding, RunResult, Severity, Status
from tests.checks.infiniband.trees import ib_port
from tests.helpers import run_check
from tests.linux.infiniband.ttar import ttar_files
from tests.modes_support import run_of

BOOT = "/proc/sys/kernel/random/boot_id"


def _previous(results, rule="TEST") -> RunResult:
    """A previous run holding ``results`` for ``rule`` (as a --state file gives it)."""
    fs = tuple(Finding(rule_id=rule, check="infiniband.link_errors", severity=Severity.HIGH,
                       title="t", result=r) for r in results)
    return run_of(fs)


def _scan(make_root, files, previous=None, params=None):
    settings = {"previous": previous} if previous is not None else {}
    got = run_check("infiniband.link_errors", make_root(files), params, live=True,
                    settings=settings)
    return {r.subject: r for r in got}


def test_first_scan_is_a_baseline_then_growth_fails(make_root) -> None:  # hand-made
    files = {BOOT: "b1\n"}
    ib_port(files, "mlx5_0", 1, symbol_error=5, link_downed=1, link_error_recovery=0)
    ib_port(files, "mlx5_1", 1, symbol_error=0, link_downed=0, link_error_recovery=2)
    first = _scan(make_root, files)
    assert {r.status for r in first.values()} == {Status.SKIP}
    assert "--state" in first["mlx5_0/1"].message
    assert first["mlx5_0/1"].data["counters"] == {"symbol_error": 5, "link_downed": 1,
                                                  "link_error_recovery": 0}
    prev = _previous(first.values())
    # mlx5_0: the link went down twice more; mlx5_1: 8 symbol errors (tolerated)
    files2 = {BOOT: "b1\n"}
    ib_port(files2, "mlx5_0", 1, symbol_error=5, link_downed=3, link_error_recovery=0)
    ib_port(files2, "mlx5_1", 1, symbol_error=8, link_downed=0, link_error_recovery=2)
    got = _scan(make_root, files2, prev)
    assert got["mlx5_0/1"].status is Status.FAIL
    assert "link_downed +2" in got["mlx5_0/1"].message and got["mlx5_0/1"].remediation
    assert got["mlx5_1/1"].status is Status.PASS
    got = _scan(make_root, files2, prev, {"max_growth": {"symbol_error": 0}})
    assert got["mlx5_1/1"].status is Status.FAIL


def test_reset_and_reboot_are_new_baselines(make_root) -> None:  # hand-made
    files = {BOOT: "b1\n"}
    ib_port(files, "mlx5_0", 1, symbol_error=50, link_downed=4, link_error_recovery=1)
    prev = _previous(_scan(make_root, files).values())
    lower = {BOOT: "b1\n"}
    ib_port(lower, "mlx5_0", 1, symbol_error=0, link_downed=1, link_error_recovery=0)
    assert _scan(make_root, lower, prev)["mlx5_0/1"].status is Status.SKIP
    rebooted = {BOOT: "b2\n"}
    ib_port(rebooted, "mlx5_0", 1, symbol_error=60, link_downed=9, link_error_recovery=1)
    r = _scan(make_root, rebooted, prev)["mlx5_0/1"]
    assert r.status is Status.SKIP and "reboot" in r.message


def test_saturated_counter_fails(make_root) -> None:  # hand-made
    files = {BOOT: "b1\n"}
    ib_port(files, "mlx5_0", 1, symbol_error=65535, link_downed=0, link_error_recovery=0)
    [r] = _scan(make_root, files).values()
    assert r.status is Status.FAIL and "saturated at 65535" in r.message


def test_real_capture_without_pma(make_root) -> None:
    files, links = ttar_files("node_exporter-sys-infiniband.ttar")
    got = {r.subject: r for r in run_check("infiniband.link_errors",
                                           make_root(files, links), live=True)}
    # i40iw0 has no PMA (N/A): not judged; mlx4_0 port 2 lacks symbol_error
    assert set(got) == {"mlx4_0/1", "mlx4_0/2"}
    assert got["mlx4_0/2"].data["counters"] == {"link_downed": 0, "link_error_recovery": 0}
    prev = _previous(got.values())
    again = {r.subject: r for r in run_check("infiniband.link_errors",
                                             make_root(files, links), live=True,
                                             settings={"previous": prev})}
    assert {r.status for r in again.values()} == {Status.PASS}


def test_state_file_round_trip(make_root, tmp_path) -> None:
    """The counters survive the JSON report a --state file is."""
    from aiaudit.core.serialize import run_dict, run_from_dict

    files = {BOOT: "b1\n"}
    ib_port(files, "mlx5_0", 1, symbol_error=1, link_downed=0, link_error_recovery=0)
    prev = run_from_dict(run_dict(_previous(_scan(make_root, files).values())))
    files["/sys/class/infiniband/mlx5_0/ports/1/counters/link_downed"] = "1\n"
    assert _scan(make_root, files, prev)["mlx5_0/1"].status is Status.FAIL


def test_offline(make_root) -> None:
    [r] = run_check("infiniband.link_errors", make_root(ib_port({}, "mlx5_0", 1)))
    assert r.status is Status.SKIP
