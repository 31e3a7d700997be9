"""The PCI inventory (:mod:`aiaudit.linux.pci.devices`): kinds, upstream bridges, virtual
functions."""

from __future__ import annotations

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.pci import devices
from tests.checks.readiness_trees import DEV, pci


@pytest.mark.parametrize(("vendor", "klass", "kind"), [
    (0x10DE, 0x030200, "GPU"), (0x10DE, 0x030000, "GPU"), (0x10DE, 0x068000, "NVSwitch"),
    (0x15B3, 0x020700, "HCA"), (0x15B3, 0x020000, "HCA"), (0x8086, 0x020700, "HCA"),
    (0x8086, 0x020000, "device"), (0x10DE, 0x040300, "device"), (0x8086, 0x060400, "device"),
    # AMD: the classes amdgpu binds (amdgpu_drv.c pciidlist), not its audio function
    (0x1002, 0x120000, "GPU"), (0x1002, 0x038000, "GPU"), (0x1002, 0x030000, "GPU"),
    (0x1002, 0x040300, "device"), (0x1002, 0x030200, "device"), (0x1022, 0x120000, "device"),
])
def test_kind(vendor: int, klass: int, kind: str) -> None:
    assert devices.PciDev("0000:01:00.0", vendor, klass, "/x", None).kind == kind


def test_is_bdf() -> None:
    assert devices.is_bdf("0000:01:00.0")
    assert not devices.is_bdf("pci0000:00")
    assert not devices.is_bdf("01:00.0")


def test_inventory_upstream_and_virtual_functions(make_root) -> None:
    files: dict = {}
    links: dict = {}
    pci(files, links, "0000:00:01.0", 0x8086, 0x060400)
    pci(files, links, "0000:00:01.0/0000:01:00.0", 0x15B3, 0x020700)
    pci(files, links, "0000:00:01.0/0000:01:00.1", 0x15B3, 0x020700)
    links[f"{DEV}/0000:00:01.0/0000:01:00.1/physfn"] = "../0000:01:00.0"
    files["/sys/bus/pci/devices/0000:02:00.0/vendor"] = "garbage\n"  # left out
    root = str(make_root(files, links))
    got = {d.bdf: d for d in devices.pci_devices(Host(root, live=True))}
    assert sorted(got) == ["0000:00:01.0", "0000:01:00.0", "0000:01:00.1"]
    assert got["0000:00:01.0"].upstream is None  # a root port: its parent is pci0000:00
    assert got["0000:01:00.0"].upstream == got["0000:00:01.0"].path
    assert not got["0000:01:00.0"].virtfn and got["0000:01:00.1"].virtfn
    assert devices.pci_devices(Host(root)) == []  # live state only


def test_vendor_predicates() -> None:
    mi = devices.PciDev("0000:05:00.0", 0x1002, 0x120000, "/x", None)
    nv = devices.PciDev("0000:18:00.0", 0x10DE, 0x030200, "/x", None)
    assert mi.is_amd_gpu and mi.is_gpu and not mi.is_nvidia_gpu
    assert nv.is_nvidia_gpu and nv.is_gpu and not nv.is_amd_gpu
