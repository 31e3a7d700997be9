"""``handover.device_nodes``: the nodes nvidia-modprobe makes.  The /proc files are
hand-made in the driver's formats (``/proc/driver/nvidia/params`` ``Name: value`` lines,
the capability file as NVIDIA's MIG user guide prints it: ``DeviceFileMinor: 1``,
``DeviceFileMode: 256``); the nodes are real character devices made with mknod."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from aiaudit.core.model import Status
from tests.checks.readiness_trees import gpu_host
from tests.helpers import run_check

PARAMS = ("ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\nDeviceFileUID: 0\n"
          "DeviceFileGID: 0\nDeviceFileMode: 438\n")
DEVICES = ("Character devices:\n  1 mem\n195 nvidia\n195 nvidiactl\n234 nvidia-uvm\n"
           "237 nvidia-caps\n\nBlock devices:\n  8 sd\n")
INFO = ("Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t GPU-x\n"
        "Device Minor: \t {n}\nBus Type: \t PCIe\n")


def _mknod(root: Path, path: str, major: int, minor: int, mode: int = 0o666) -> None:
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(p, stat.S_IFCHR | mode, os.makedev(major, minor))
    os.chmod(p, mode)


def _node(make_root, caps: bool = True):
    files, links = gpu_host(**{
        "/proc/driver/nvidia/params": PARAMS, "/proc/devices": DEVICES,
        "/proc/driver/nvidia/gpus/0000:1b:00.0/information": INFO.format(n=0),
        "/proc/driver/nvidia/gpus/0000:43:00.0/information": INFO.format(n=1)})
    if caps:
        files["/proc/driver/nvidia/capabilities/mig/config"] = (
            "DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1\n")
    return make_root(files, links)


@pytest.fixture
def can_mknod(tmp_path: Path) -> None:
    try:
        os.mknod(tmp_path / "probe", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except OSError:
        pytest.skip("mknod is not allowed here (needs root / CAP_MKNOD)")


def test_all_nodes_as_the_driver_makes_them(make_root, can_mknod) -> None:
    root = _node(make_root)
    _mknod(root, "/dev/nvidiactl", 195, 255)
    _mknod(root, "/dev/nvidia0", 195, 0)
    _mknod(root, "/dev/nvidia1", 195, 1)
    _mknod(root, "/dev/nvidia-uvm", 234, 0)
    _mknod(root, "/dev/nvidia-uvm-tools", 234, 1)
    _mknod(root, "/dev/nvidia-caps/nvidia-cap1", 237, 1, 0o400)
    got = {r.subject: r.status for r in run_check("handover.device_nodes", root, live=True)}
    assert got == {p: Status.PASS for p in (
        "/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools", "/dev/nvidia-caps/nvidia-cap1")}


def test_missing_wrong_mode_wrong_device(make_root, can_mknod) -> None:
    root = _node(make_root, caps=False)
    _mknod(root, "/dev/nvidiactl", 195, 255, 0o660)     # a site chmod
    _mknod(root, "/dev/nvidia0", 195, 1)                # wrong minor
    (root / "dev/nvidia1").write_text("")               # a regular file
    _mknod(root, "/dev/nvidia-uvm-tools", 234, 1)
    got = {r.subject: r for r in run_check("handover.device_nodes", root, live=True)}
    assert {k: r.status for k, r in got.items()} == {
        "/dev/nvidiactl": Status.FAIL, "/dev/nvidia0": Status.FAIL,
        "/dev/nvidia1": Status.FAIL, "/dev/nvidia-uvm": Status.FAIL,
        "/dev/nvidia-uvm-tools": Status.PASS}
    assert "0666" in got["/dev/nvidiactl"].message and got["/dev/nvidiactl"].remediation
    assert "195:0" in got["/dev/nvidia0"].message
    assert got["/dev/nvidia-uvm"].message.endswith("missing")


def test_uvm_not_loaded_and_params_mode(make_root) -> None:
    files, links = gpu_host(**{
        "/proc/driver/nvidia/params": PARAMS.replace("438", "432").replace(
            "DeviceFileGID: 0", "DeviceFileGID: 44"),
        "/proc/devices": "Character devices:\n195 nvidia\n"})
    from aiaudit.core.host import Host
    from aiaudit.linux.gpu import devnodes

    host = Host(str(make_root(files, links)), live=True)
    ctl, uvm, _tools = devnodes.wanted(host)
    assert (ctl.mode, ctl.gid) == (0o660, 44) and uvm.major is None
    assert "not loaded" in (devnodes.inspect(host, uvm).problem or "")


def test_offline_and_no_driver(make_root) -> None:
    [r] = run_check("handover.device_nodes", _node(make_root), live=False)
    assert r.status is Status.SKIP and "offline" in r.message
    [r] = run_check("handover.device_nodes", make_root({"/etc/hostname": "x\n"}), live=True)
    assert r.status is Status.SKIP
