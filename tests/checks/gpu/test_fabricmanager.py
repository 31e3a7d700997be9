"""``gpu.fabricmanager``: NVSwitch systems run an enabled Fabric Manager of the driver's
version."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from tests.checks.readiness_trees import gpu_host, pci
from tests.helpers import run_check

DPKG = ("Package: nvidia-fabricmanager-535\nStatus: install ok installed\n"
        "Version: {v}\nArchitecture: amd64\n\n")


def nvswitch_host(fm: str | None, enabled: bool = True):
    files, links = gpu_host()
    pci(files, links, "0000:00:01.0", 0x8086, 0x060400, "16.0 GT/s PCIe", 4)
    pci(files, links, "0000:00:01.0/0000:01:00.0", 0x10DE, 0x068000, "16.0 GT/s PCIe", 2)
    if fm:
        files["/var/lib/dpkg/status"] = DPKG.format(v=fm)
        files["/lib/systemd/system/nvidia-fabricmanager.service"] = "[Service]\nExecStart=/x\n"
        if enabled:
            links["/etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service"] = \
                "/lib/systemd/system/nvidia-fabricmanager.service"
    return files, links


@pytest.mark.parametrize(("fm", "enabled", "status"), [
    ("535.161.08-1", True, Status.PASS),
    ("535.161.07-1", True, Status.FAIL),
    ("535.161.08-1", False, Status.FAIL),
    (None, True, Status.FAIL),
])
def test_fabricmanager(make_root, fm, enabled, status) -> None:
    [r] = run_check("gpu.fabricmanager", make_root(*nvswitch_host(fm, enabled)), live=True)
    assert r.status is status, r.message


def test_fabricmanager_skips_without_nvswitch(make_root) -> None:
    files, links = gpu_host()
    pci(files, links, "0000:00:01.0", 0x10DE, 0x030200, "16.0 GT/s PCIe", 16)
    [r] = run_check("gpu.fabricmanager", make_root(files, links), live=True)
    assert r.status is Status.SKIP
