"""``fabric.manager``: Fabric Manager running with NVSwitches, FABRIC_MODE in its
configuration.  Trees are hand-made (labelled): the configuration lines as the Fabric
Manager User Guide documents them, the process's comm cut to 15 characters."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.readiness_trees import pci
from tests.helpers import run_check

CFG = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"
CONFIG = ("# NVIDIA Fabric Manager configuration file.\nLOG_LEVEL=4\n"
          "LOG_FILE_NAME=/var/log/fabricmanager.log\nFABRIC_MODE=0\n"
          "FABRIC_MODE_RESTART=0\nFM_STAY_RESIDENT_ON_FAILURES=0\n")


def _hgx(running: bool, cfg: str = CONFIG):
    files: dict = {CFG: cfg}
    links: dict = {}
    for i in range(4):
        pci(files, links, f"0000:00:01.0/0000:0{i + 5}:00.0", 0x10DE, 0x068000)
    if running:
        files["/proc/4242/comm"] = "nv-fabricmanage\n"
    files["/proc/1/comm"] = "systemd\n"
    return files, links


def test_running_and_bare_metal(make_root) -> None:
    files, links = _hgx(True)
    got = {r.subject: r for r in run_check("fabric.manager", make_root(files, links),
                                           live=True)}
    assert got["nv-fabricmanager"].status is Status.PASS
    assert "pid 4242" in got["nv-fabricmanager"].message
    assert got[CFG].status is Status.PASS


def test_stopped_drains(make_root) -> None:
    files, links = _hgx(False)
    got = {r.subject: r for r in run_check("fabric.manager", make_root(files, links),
                                           live=True)}
    r = got["nv-fabricmanager"]
    assert r.status is Status.FAIL and "not running" in r.message and r.remediation


def test_fabric_mode(make_root) -> None:
    files, links = _hgx(True, CONFIG.replace("FABRIC_MODE=0", "FABRIC_MODE=1"))
    got = {r.subject: r for r in run_check("fabric.manager", make_root(files, links),
                                           live=True)}
    assert got[CFG].status is Status.FAIL and "shared NVSwitch" in got[CFG].message
    assert got[CFG].evidence[0].line == 4
    got = {r.subject: r for r in run_check("fabric.manager", make_root(files, links),
                                           {"fabric_mode": 1}, live=True)}
    assert got[CFG].status is Status.PASS


def test_offline_reads_the_configuration(make_root) -> None:
    files, links = _hgx(False, CONFIG.replace("FABRIC_MODE=0\n", "#FABRIC_MODE=2\n"))
    [r] = run_check("fabric.manager", make_root(files, links))
    assert r.status is Status.PASS and "unset" in r.evidence[0].value
    [r] = run_check("fabric.manager", make_root({"/etc/hostname": "x\n"}))
    assert r.status is Status.SKIP


def test_no_nvswitch_skips(make_root) -> None:
    files: dict = {"/etc/hostname": "x\n"}
    links: dict = {}
    pci(files, links, "0000:00:01.0/0000:05:00.0", 0x10DE, 0x030200)
    [r] = run_check("fabric.manager", make_root(files, links), live=True)
    assert r.status is Status.SKIP


def test_runtime_only(make_root) -> None:
    files, links = _hgx(True)
    got = run_check("fabric.manager", make_root(files, links), {"config": False}, live=True)
    assert [r.subject for r in got] == ["nv-fabricmanager"]
