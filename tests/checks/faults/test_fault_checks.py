"""The kernel-log fault checks (``checks/faults/``) on fixture logs in the /dev/kmsg format
built from real messages (tests/fixtures/kmsg/SOURCES.md), scanned as ``--live`` snapshot
roots."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from aiaudit.core.model import Status
from aiaudit.linux.kmsg.log import CURSOR_KEY
from tests.helpers import ROOTS, run_check

KMSG = Path(__file__).resolve().parents[2] / "fixtures" / "kmsg"


def _root(tmp: Path, *logs: str, text: str = "", sys_from: str | None = None,
          uptime: str | None = None) -> Path:
    (tmp / "dev").mkdir(parents=True)
    body = "".join((KMSG / name).read_text() for name in logs) + text
    (tmp / "dev/kmsg").write_text(body)
    if uptime:
        (tmp / "proc").mkdir()
        (tmp / "proc/uptime").write_text(f"{uptime} 1.0\n")
    if sys_from:
        shutil.copytree(ROOTS / sys_from / "root/sys", tmp / "sys", symlinks=True)
    return tmp


def _run(check: str, root: Path, params: dict[str, Any] | None = None, *,
         live: bool = True, settings: dict[str, Any] | None = None) -> list[Any]:
    return run_check(check, root, params, live=live, settings=settings)


def _statuses(results: list[Any]) -> dict[str, Status]:
    return {r.subject: r.status for r in results}


# ------------------------------------------------------------------ Xid
def test_xid79_fails_the_reset_rule_naming_the_catalogue(tmp_path: Path) -> None:
    [r] = _run("faults.nvidia_xid", _root(tmp_path, "xid79-off-bus.kmsg"))
    assert r.status is Status.FAIL and r.subject == "GPU 0000:2b:00.0"
    assert r.actual == "Xid 79 (RESTART_BM) x1"
    assert r.expected == "no Xid 79 (RESTART_BM) since boot"
    assert "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS" in r.message
    assert "[NVIDIA Xid catalogue]" in r.message
    assert r.evidence[0].source == "dev/kmsg"
    assert "79, GPU has fallen off the bus." in (r.evidence[0].value or "")
    assert r.data["catalogue"].startswith("https://docs.nvidia.com/deploy/xid-errors")


def test_one_xid13_does_not_fail_either_xid_rule(tmp_path: Path) -> None:
    root = _root(tmp_path, "xid13-once.kmsg")
    [r] = _run("faults.nvidia_xid", root)
    assert r.status is Status.PASS and "since boot" in r.message
    app = {"actions": ["RESTART_APP", "WORKFLOW_XID_45"], "count": 20, "window_s": 3600}
    assert _statuses(_run("faults.nvidia_xid", root, app)) == {"kernel log": Status.PASS}


def _xid13(n: int, at_s: float, dev: str = "0000:3b:00") -> str:
    return "".join(f"4,{500 + i},{int(at_s * 1e6) + i},-;NVRM: Xid (PCI:{dev}): 13, "
                   f"pid={4000 + i}, name=python3, Graphics Exception: ESR 0x50\n"
                   for i in range(n))


def test_repeated_app_xids_fail_only_inside_the_window(tmp_path: Path) -> None:
    app = {"actions": ["RESTART_APP", "WORKFLOW_XID_45"], "count": 20, "window_s": 3600}
    recent = _root(tmp_path / "recent", "xid13-once.kmsg", text=_xid13(25, 9_649_000),
                   uptime="9650000.0")
    [r] = _run("faults.nvidia_xid", recent, app)
    assert r.status is Status.FAIL and r.actual == "Xid 13 (RESTART_APP) x25"
    assert r.expected == "fewer than 20 Xid 13 (RESTART_APP) in the last 3600 s"
    old = _root(tmp_path / "old", text=_xid13(25, 1_000), uptime="9650000.0")
    assert _run("faults.nvidia_xid", old, app)[0].status is Status.PASS
    assert _run("faults.nvidia_xid", old, {**app, "window_s": 0})[0].status is Status.FAIL


def test_per_code_thresholds_and_catalogue_extensions(tmp_path: Path) -> None:
    root = _root(tmp_path, "xid13-once.kmsg")
    # a site that drains on Xid 13 by overriding its action
    [r] = _run("faults.nvidia_xid", root, {"catalogue": {"13": {"action": "RESET_GPU"}}})
    assert r.status is Status.FAIL and "[ruleset params]" in r.message
    [r] = _run("faults.nvidia_xid", root, {"codes": [13], "per_code": {"13": {"count": 4}}})
    assert r.status is Status.PASS  # 3 lines < 4
    [r] = _run("faults.nvidia_xid", root, {"codes": [13], "per_code": {"13": {"count": 3}}})
    assert r.status is Status.FAIL
    root2 = _root(tmp_path / "b", "xid79-off-bus.kmsg")
    assert _run("faults.nvidia_xid", root2, {"ignore_codes": [79]})[0].status is Status.PASS


def test_nvlink_xid45_cleanup_is_not_a_drain(tmp_path: Path) -> None:
    [r] = _run("faults.nvidia_xid", _root(tmp_path, "xid45-after-nvlink.kmsg"))
    assert r.status is Status.PASS


def _previous(results: list[Any]) -> SimpleNamespace:
    return SimpleNamespace(findings=[SimpleNamespace(rule_id="TEST", result=r)
                                     for r in results])


def test_with_state_an_old_fault_is_reported_once(tmp_path: Path) -> None:
    """The first scan fails and records its cursor; the next scan of the same boot with
    that scan as --state sees only newer lines (the node, resumed, is not drained again for
    the same line); a new Xid 79 after it fails again."""
    root = _root(tmp_path, "xid79-off-bus.kmsg")
    boot = root / "proc/sys/kernel/random"
    boot.mkdir(parents=True)
    (boot / "boot_id").write_text("0c6a1e5e-3f6c-4b9d-9d0e-3a1f2b7c8d90\n")
    first = _run("faults.nvidia_xid", root)
    assert first[0].status is Status.FAIL
    assert first[0].data[CURSOR_KEY]["seq"] == 1405
    second = _run("faults.nvidia_xid", root, settings={"previous": _previous(first)})
    assert second[0].status is Status.PASS and "since the previous scan" in second[0].message
    with open(root / "dev/kmsg", "a") as fh:
        fh.write("4,1406,40000000,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n")
    third = _run("faults.nvidia_xid", root, settings={"previous": _previous(second)})
    assert _statuses(third) == {"GPU 0000:3b:00.0": Status.FAIL}


# ------------------------------------------------------------------ other kinds
def test_sxid_fatal_fails_and_non_fatal_only_when_asked(tmp_path: Path) -> None:
    root = _root(tmp_path, "sxid.kmsg")
    assert _statuses(_run("faults.nvswitch_sxid", root)) == {"NVSwitch 0000:84:00.0": Status.FAIL}
    got = _statuses(_run("faults.nvswitch_sxid", root, {"non_fatal_count": 1}))
    assert got == {"NVSwitch 0000:02:00.0": Status.FAIL, "NVSwitch 0000:84:00.0": Status.FAIL}
    assert _run("faults.nvswitch_sxid", _root(tmp_path / "b", "xid13-once.kmsg"))[0].status \
        is Status.PASS


def test_nvrm_off_bus(tmp_path: Path) -> None:
    [r] = _run("faults.nvrm_errors", _root(tmp_path, "xid79-off-bus.kmsg"))
    assert r.status is Status.FAIL and r.actual == "NVRM 'has fallen off the bus' x1"
    assert _run("faults.nvrm_errors", _root(tmp_path / "b", "xid13-once.kmsg"))[0].status \
        is Status.PASS
    init = "3,7,8,-;NVRM: GPU 0000:65:00.0: RmInitAdapter failed! (0x22:0x56:667)\n"
    r2 = _run("faults.nvrm_errors", _root(tmp_path / "c", text="6,1,2,-;boot\n" + init))
    assert _statuses(r2) == {"GPU 0000:65:00.0": Status.FAIL}


AER_ON_HGX = ("3,20,30000000,-;pcieport 0000:12:00.0: PCIe Bus Error: severity=Uncorrected "
              "(Non-Fatal), type=Transaction Layer, (Requester ID)\n"
              "3,21,30000010,-;ahci 0000:00:17.0: PCIe Bus Error: severity=Uncorrected "
              "(Fatal), type=Transaction Layer, (Requester ID)\n")


def test_aer_names_the_gpu_below_the_port_and_ignores_other_devices(tmp_path: Path) -> None:
    root = _root(tmp_path, text="6,1,2,-;boot\n" + AER_ON_HGX, sys_from="node-hgx-nvswitch")
    sata = root / "sys/bus/pci/devices/0000:00:17.0"  # a SATA controller (not an accelerator)
    sata.mkdir()
    (sata / "class").write_text("0x010601\n")
    (sata / "vendor").write_text("0x8086\n")
    [r] = _run("faults.pcie_aer", root)
    assert r.status is Status.FAIL
    assert r.subject == "PCIe port 0000:12:00.0 above GPU 0000:18:00.0"
    assert r.actual == "non-fatal AER x1"
    got = _statuses(_run("faults.pcie_aer", root, {"scope": "all"}))
    assert got == {"PCIe port 0000:12:00.0 above GPU 0000:18:00.0": Status.FAIL,
                   "device 0000:00:17.0": Status.FAIL}


def test_aer_without_sysfs_counts_and_says_so(tmp_path: Path) -> None:
    [r] = _run("faults.pcie_aer", _root(tmp_path, "aer-fatal-gpu-port.kmsg"))
    assert r.status is Status.FAIL and "device class unknown" in r.subject
    assert r.actual == "fatal AER x1"


def test_corrected_aer_fails_only_past_its_rate(tmp_path: Path) -> None:
    root = _root(tmp_path, "aer-corrected-flood.kmsg")
    rate = {"severities": ["corrected"], "count": 100, "window_s": 3600}
    got = _run("faults.pcie_aer", root, rate)
    assert [r.actual for r in got] == ["corrected AER x150"]
    assert _run("faults.pcie_aer", root, {**rate, "count": 200})[0].status is Status.PASS


def test_machine_checks(tmp_path: Path) -> None:
    root = _root(tmp_path, "mce.kmsg")
    assert _statuses(_run("faults.machine_check", root)) == {"CPU 0": Status.FAIL}
    got = _statuses(_run("faults.machine_check", root, {"logged_count": 2}))
    assert got == {"CPU 0": Status.FAIL, "node": Status.FAIL}
    corrected_only = "6,1,2,-;boot\n3,7,8,-;EDAC MC1: 1 CE memory scrubbing error on DIMM#0\n"
    assert _run("faults.machine_check", _root(tmp_path / "b", text=corrected_only))[0].status \
        is Status.PASS


def test_amdgpu_ras_log(tmp_path: Path) -> None:
    [r] = _run("faults.amdgpu_ras_log", _root(tmp_path, "amdgpu-ras.kmsg"))
    assert r.status is Status.FAIL and r.subject == "GPU 0000:0b:00.0"
    clear = "6,1,2,-;amdgpu 0000:c3:00.0: amdgpu: no uncorrectable hardware errors detected " \
            "in umc block\n"
    assert _run("faults.amdgpu_ras_log", _root(tmp_path / "b", text=clear))[0].status \
        is Status.PASS


# ------------------------------------------------------------------ modes and errors
CHECKS = ["faults.nvidia_xid", "faults.nvswitch_sxid", "faults.nvrm_errors",
          "faults.pcie_aer", "faults.machine_check", "faults.amdgpu_ras_log"]


@pytest.mark.parametrize("check", CHECKS)
def test_offline_every_fault_check_is_not_applicable(tmp_path: Path, check: str) -> None:
    [r] = _run(check, _root(tmp_path, "xid79-off-bus.kmsg"), live=False)
    assert r.status is Status.SKIP and "live state" in r.message


@pytest.mark.parametrize("check", CHECKS)
def test_a_log_in_another_format_is_an_error_not_a_pass(tmp_path: Path, check: str) -> None:
    root = _root(tmp_path, text="[   31.855221] NVRM: Xid (PCI:0000:2b:00): 79, GPU has "
                                "fallen off the bus.\n")
    [r] = _run(check, root)
    assert r.status is Status.ERROR and "dev/kmsg:1" in r.message
