"""``fabric.nvlink_errors``: NVLink counters growing since the previous scan.  The first
scans run on the fixtures of ``tests/fixtures/gpu/nvlink`` (hand-made in the formats of
published captures); the grown counters are those documents with values changed (derived,
labelled in each test)."""

from __future__ import annotations

from aiaudit.core.model import Finding, RunResult, Severity, Status
from tests.checks.fabric.nvlinkhost import ERRORS, fixture, nvlink_host, run_on
from tests.modes_support import run_of

HGX = fixture("hgx-a100-8x-errors.txt")
B300 = fixture("b300-nvlink5-errors.txt")


def _previous(results, rule="TEST") -> RunResult:
    """A previous run holding ``results`` for ``rule`` (as a --state file gives it)."""
    fs = tuple(Finding(rule_id=rule, check="fabric.nvlink_errors", severity=Severity.HIGH,
                       title="t", result=r) for r in results)
    return run_of(fs)


def _scan(make_root, text, previous=None, params=None, **host):
    settings = {"previous": previous} if previous is not None else {}
    h = nvlink_host(make_root, errors=text, **host)
    got = run_on(h, "fabric.nvlink_errors", params, settings)
    assert h.calls == [ERRORS]
    return got


def _grow(text: str, gpu: int, link: int, counter: str, value: int) -> str:
    """``text`` with one counter of one GPU's link set to ``value`` (derived)."""
    head, _, rest = text.partition(f"GPU {gpu}:")
    old = f"Link {link}: {counter}: 0\n"
    return head + f"GPU {gpu}:" + rest.replace(old, f"Link {link}: {counter}: {value}\n", 1)


def test_first_scan_is_a_baseline(make_root) -> None:
    got = _scan(make_root, HGX)
    assert [r.status for r in got] == [Status.SKIP] * 8
    assert "--state" in got[0].message and "12 links" in got[0].message
    assert got[0].data["counters"]["0"] == {"replay": 0, "recovery": 0, "crc": 0}
    assert got[0].data["boot_id"] == "b1" and got[0].data["uptime_s"] == 1000.0


def test_recovery_and_replay_growth_fail(make_root) -> None:  # derived
    prev = _previous(_scan(make_root, HGX))
    again = _scan(make_root, HGX, prev, uptime=4600.0)
    assert [r.status for r in again] == [Status.PASS] * 8
    assert "in 3600 s" in again[0].message
    grown = _grow(_grow(HGX, 2, 5, "Recovery Errors", 2), 6, 0, "Replay Errors", 1)
    got = _scan(make_root, grown, prev, uptime=4600.0)
    assert [r.status for r in got] == [Status.PASS] * 2 + [Status.FAIL] + [Status.PASS] * 3 + [
        Status.FAIL, Status.PASS]
    assert "link 5 recovery +2 (limit 0)" in got[2].message and got[2].remediation
    assert "link 0 replay +1 (limit 0)" in got[6].message
    tolerant = _scan(make_root, grown, prev, {"max_growth": {"replay": 5}}, uptime=4600.0)
    assert tolerant[6].status is Status.PASS and tolerant[2].status is Status.FAIL


def test_crc_is_judged_by_rate(make_root) -> None:  # derived
    prev = _previous(_scan(make_root, HGX))
    noise = _grow(HGX, 0, 3, "CRC Errors", 5000)  # 5000 in an hour: corrected noise
    got = _scan(make_root, noise, prev, uptime=4600.0)
    assert got[0].status is Status.PASS and "crc +5000" in got[0].message
    storm = _grow(HGX, 0, 3, "CRC Errors", 400_000)  # 400,000 in 1000 s: 400/s
    got = _scan(make_root, storm, prev, uptime=2000.0)
    assert got[0].status is Status.FAIL and "(400/s, limit 100/s)" in got[0].message
    got = _scan(make_root, noise, prev, {"max_growth": {"crc": 100}}, uptime=4600.0)
    assert got[0].status is Status.FAIL and "crc +5000 (limit 100)" in got[0].message


def test_reboot_and_reset_are_new_baselines(make_root) -> None:  # derived
    prev = _previous(_scan(make_root, _grow(HGX, 0, 0, "Replay Errors", 40)))
    rebooted = _scan(make_root, _grow(HGX, 0, 0, "Replay Errors", 90), prev, boot="b2")
    assert rebooted[0].status is Status.SKIP and "reboot" in rebooted[0].message
    reset = _scan(make_root, HGX, prev)  # nvidia-smi nvlink -r: counters back to 0
    assert reset[0].status is Status.SKIP


def test_nvlink5_counters(make_root) -> None:  # derived growth of the hand-made B300 file
    prev = _previous(_scan(make_root, B300))
    fec = B300.replace("FEC Errors - 0: 36140749276", "FEC Errors - 0: 99140749276")
    fec = fec.replace("Link 0: Link recovery successful events: 0",
                      "Link 0: Link recovery successful events: 3", 1)
    got = _scan(make_root, fec, prev, uptime=4600.0)
    assert {r.status for r in got} == {Status.PASS}  # clean codewords, recovered links
    failed = B300.replace("Link 1: Link recovery failed events: 0",
                          "Link 1: Link recovery failed events: 1", 1)
    got = _scan(make_root, failed, prev, uptime=4600.0)
    assert got[0].status is Status.FAIL and "link 1 recovery +1" in got[0].message
    packets = B300.replace("Link 0: Rx Errors: 0", "Link 0: Rx Errors: 11", 1)
    got = _scan(make_root, packets, prev, uptime=4600.0)
    assert got[0].status is Status.FAIL and "link 0 packet +11 (limit 10)" in got[0].message


def test_no_nvlink_and_failures(make_root) -> None:
    [r] = _scan(make_root, "")
    assert r.status is Status.SKIP and "no NVLink" in r.message
    [r] = _scan(make_root, "GPU 0: NVIDIA A100-PCIE-40GB (UUID: GPU-1)\nNVML: Unable to "
                "retrieve NVLink information as all links are inActive\n")
    assert r.status is Status.SKIP
    [r] = _scan(make_root, "Failed to initialize NVML: Unknown Error\n", rc=255)
    assert r.status is Status.ERROR and "exited 255" in r.message


def test_previous_data_is_validated(make_root) -> None:
    from aiaudit.core.model import Result

    junk = [Result(Status.SKIP, s, "x", data=d) for s, d in [
        ("GPU 0 (GPU-00001000-0000-0028-2828-000000000000)",
         {"counters": {"0": {"replay": "7", "recovery": True, "crc": -1}}, "uptime_s": "x"}),
        ("GPU 1 (GPU-00001001-0001-0028-2828-000000000001)", {"counters": []}),
        ("GPU 2 (GPU-00001002-0002-0028-2828-000000000002)", None)]]
    got = _scan(make_root, HGX, _previous(junk))
    assert {r.status for r in got} == {Status.SKIP}
