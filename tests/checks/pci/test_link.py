"""``pci.link``: PCIe links at the width and speed both ends support."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.readiness_trees import gpu_host, pci
from tests.helpers import run_check


def test_link_width_and_speed_against_upstream_port(make_root) -> None:
    files, links = gpu_host()
    pci(files, links, "0000:00:01.0", 0x8086, 0x060400, "16.0 GT/s PCIe", 16)
    # a Gen5 HCA in a Gen4 slot at Gen4 x16: as good as the slot allows
    pci(files, links, "0000:00:01.0/0000:01:00.0", 0x15B3, 0x020700, "32.0 GT/s PCIe", 16,
        cur_speed="16.0 GT/s PCIe")
    pci(files, links, "0000:00:02.0", 0x8086, 0x060400, "32.0 GT/s PCIe", 16)
    pci(files, links, "0000:00:02.0/0000:02:00.0", 0x15B3, 0x020700, "32.0 GT/s PCIe", 16,
        cur_speed="8.0 GT/s PCIe")
    pci(files, links, "0000:00:03.0", 0x8086, 0x060400, "32.0 GT/s PCIe", 16)
    pci(files, links, "0000:00:03.0/0000:03:00.0", 0x10DE, 0x030200, "32.0 GT/s PCIe", 16,
        cur_speed="2.5 GT/s PCIe")
    pci(files, links, "0000:00:04.0", 0x8086, 0x060400, "32.0 GT/s PCIe", 16)
    pci(files, links, "0000:00:04.0/0000:04:00.0", 0x10DE, 0x030200, "32.0 GT/s PCIe", 16,
        cur_width=8)
    got = {r.subject: r for r in run_check("pci.link", make_root(files, links), live=True)}
    assert got["HCA 0000:01:00.0"].status is Status.PASS
    assert got["HCA 0000:02:00.0"].status is Status.FAIL
    assert got["GPU 0000:03:00.0"].status is Status.PASS
    assert "idle GPU" in got["GPU 0000:03:00.0"].message
    assert got["GPU 0000:04:00.0"].status is Status.FAIL
    assert got["GPU 0000:04:00.0"].expected == "x16 at 32 GT/s"
    strict = run_check("pci.link", make_root(files, links), {"gpu_speed_strict": True},
                       live=True)
    assert {r.subject: r.status for r in strict}["GPU 0000:03:00.0"] is Status.FAIL


def test_link_is_live_only(make_root) -> None:
    [r] = run_check("pci.link", make_root({}))
    assert r.status is Status.SKIP


def test_amd_gpus_are_gpus(make_root) -> None:
    """MI300X (processing accelerator) and a Radeon (VGA) are judged like NVIDIA GPUs, with
    the idle-GPU leniency (amdgpu lowers its link speed through PCIe DPM)."""
    files, links = {}, {}
    pci(files, links, "0000:00:01.0", 0x1022, 0x060400, "32.0 GT/s PCIe", 16)
    pci(files, links, "0000:00:01.0/0000:05:00.0", 0x1002, 0x120000, "32.0 GT/s PCIe", 16,
        cur_width=8)
    pci(files, links, "0000:00:02.0", 0x1022, 0x060400, "16.0 GT/s PCIe", 16)
    pci(files, links, "0000:00:02.0/0000:0a:00.0", 0x1002, 0x030000, "16.0 GT/s PCIe", 16,
        cur_speed="2.5 GT/s PCIe")
    pci(files, links, "0000:00:02.0/0000:0a:00.1", 0x1002, 0x040300, "16.0 GT/s PCIe", 16)
    got = {r.subject: r for r in run_check("pci.link", make_root(files, links), live=True)}
    assert set(got) == {"GPU 0000:05:00.0", "GPU 0000:0a:00.0"}  # not the HD audio function
    assert got["GPU 0000:05:00.0"].status is Status.FAIL
    assert got["GPU 0000:0a:00.0"].status is Status.PASS
    assert "idle GPU" in got["GPU 0000:0a:00.0"].message
