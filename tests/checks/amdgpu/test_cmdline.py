"""``amdgpu.cmdline``: iommu=pt and pci=realloc=off as AMD's tuning guides ask."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Aspect, Status
from tests.checks.amdgpu.trees import amd_node
from tests.helpers import run_check


def node(proc: str, grub: str, iommu: bool = True) -> tuple[dict, dict]:
    files, links = amd_node(1)
    files["/proc/cmdline"] = f"BOOT_IMAGE=/vmlinuz root=/dev/sda2 ro {proc}\n"
    files["/etc/default/grub"] = f'GRUB_CMDLINE_LINUX="{grub}"\n'
    if iommu:
        files["/sys/class/iommu/ivhd0/uevent"] = ""
    return files, links


@pytest.mark.parametrize(("proc", "grub", "status", "aspect"), [
    ("iommu=pt pci=realloc=off", "iommu=pt pci=realloc=off", Status.PASS, Aspect.RUNTIME),
    ("pci=realloc=off", "pci=realloc=off", Status.FAIL, Aspect.RUNTIME),
    ("iommu=pt", "iommu=pt pci=realloc=off", Status.FAIL, Aspect.RUNTIME),
    ("iommu=pt pci=realloc=off", "pci=realloc=off", Status.FAIL, Aspect.DRIFT),
    ("amd_iommu=off pci=noaer,realloc=off", "amd_iommu=off pci=realloc=off", Status.PASS,
     Aspect.RUNTIME),
    ("iommu=pt pci=realloc=off pci=realloc", "iommu=pt pci=realloc=off", Status.FAIL,
     Aspect.RUNTIME),
])
def test_live(make_root, proc: str, grub: str, status: Status, aspect: Aspect) -> None:
    [r] = run_check("amdgpu.cmdline", make_root(*node(proc, grub)), live=True)
    assert (r.status, r.aspect) == (status, aspect), r.message
    if status is Status.FAIL:
        assert r.evidence and r.remediation is not None


def test_no_iommu_active_and_mi200(make_root) -> None:
    [r] = run_check("amdgpu.cmdline", make_root(*node("pci=realloc=off", "pci=realloc=off",
                                                     iommu=False)), live=True)
    assert r.status is Status.PASS and "no IOMMU active" in r.message
    files, links = amd_node(1, klass=0x038000, device=0x740C)  # MI250X: no pci=realloc ask
    files["/proc/cmdline"] = "ro iommu=pt\n"
    files["/etc/default/grub"] = 'GRUB_CMDLINE_LINUX="iommu=pt"\n'
    [r] = run_check("amdgpu.cmdline", make_root(files, links), live=True)
    assert r.status is Status.PASS


def test_offline_judges_the_next_boot(make_root) -> None:
    stanza = "Package: rocm-core\nStatus: install ok installed\nVersion: 6.4.1.60401-83\n\n"
    root = make_root({"/var/lib/dpkg/status": stanza,
                      "/etc/default/grub": 'GRUB_CMDLINE_LINUX="quiet"\n'})
    [r] = run_check("amdgpu.cmdline", root)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.PERSISTED)
    assert "not judged offline" in r.message
    [r] = run_check("amdgpu.cmdline", root, {"pci_realloc_off": "never", "iommu_pt": False})
    assert r.status is Status.PASS


def test_radeon_skips(make_root) -> None:
    [r] = run_check("amdgpu.cmdline", make_root(*amd_node(1, klass=0x030000, device=0x744C)),
                    live=True)
    assert r.status is Status.SKIP and "not a data center GPU" in r.message
