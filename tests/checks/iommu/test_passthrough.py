"""``iommu.passthrough``: identity domains live; iommu=pt or the build default offline,
read as the kernel reads them."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from tests.checks.readiness_trees import DEV, KO, NO_CMDLINE, gpu_host, pci
from tests.helpers import run_check
from tests.linux.kmod.test_modinfo import make_ko


def test_iommu_offline_no_cmdline_names_what_was_looked_for(make_root) -> None:
    [r] = run_check("iommu.passthrough", make_root(KO))
    assert r.status is Status.FAIL and r.message.startswith(
        "at boot: no kernel command line found; ")
    [ev] = r.evidence
    assert (ev.kind, ev.source) == ("default", f"iommu=pt at boot: {NO_CMDLINE}")
    assert ev.value == "kernel default DMA domain (CONFIG_IOMMU_DEFAULT_*) unknown: " \
        "no boot/config-*"
    # a command line without iommu=pt: that file and line are the evidence, and the
    # kernel default that then applies
    [r] = run_check("iommu.passthrough", make_root(
        {**KO, "/etc/default/grub": 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="quiet"\n'}))
    assert r.status is Status.FAIL
    assert [(e.kind, e.path, e.line) for e in r.evidence] == [
        ("file", "/etc/default/grub", 2), ("default", None, None)]


def test_iommu_live(make_root) -> None:
    files, links = gpu_host()
    bdf = pci(files, links, "0000:00:01.0", 0x10DE, 0x030200, "32.0 GT/s PCIe", 16)
    links[f"{DEV}/0000:00:01.0/iommu_group"] = "../../../kernel/iommu_groups/7"
    files["/sys/kernel/iommu_groups/7/type"] = "DMA-FQ\n"
    dirs = ("/sys/class/iommu/dmar0",)
    [r] = run_check("iommu.passthrough", make_root(files, links, dirs), live=True)
    assert r.subject == f"GPU {bdf}" and r.status is Status.FAIL
    files["/sys/kernel/iommu_groups/7/type"] = "identity\n"
    [r] = run_check("iommu.passthrough", make_root(files, links, dirs), live=True)
    assert r.status is Status.PASS
    [r] = run_check("iommu.passthrough", make_root(files, links), live=True)
    assert r.status is Status.PASS and "no IOMMU" in r.message


def test_iommu_offline_from_cmdline(make_root) -> None:
    ko = {"/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko": make_ko("535.161.08")}
    [r] = run_check("iommu.passthrough", make_root(
        {**ko, "/etc/default/grub": 'GRUB_CMDLINE_LINUX="quiet iommu=pt"\n'}))
    assert r.status is Status.PASS
    [r] = run_check("iommu.passthrough", make_root(
        {**ko, "/etc/default/grub": 'GRUB_CMDLINE_LINUX="quiet"\n'}))
    assert r.status is Status.FAIL and r.remediation is not None


@pytest.mark.parametrize(("cmdline", "config", "ok"), [
    ("quiet", "CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y", True),    # the build default decides
    ("quiet", "# CONFIG_IOMMU_DEFAULT_PASSTHROUGH is not set\nCONFIG_IOMMU_DEFAULT_DMA_LAZY=y",
     False),
    ("iommu=pt iommu=nopt", "", False),                      # the last word wins
    ("iommu=nopt iommu.passthrough=1", "", True),
    ("iommu.passthrough=0", "CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y", False),
    ("iommu.passthrough=on", "", True),                      # kstrtobool
    ("iommu.passthrough=maybe", "CONFIG_IOMMU_DEFAULT_DMA_STRICT=y", False),  # ignored
    ("iommu=soft,pt", "", True),                             # comma-separated options
    ("intel_iommu=on,sm_on", "", False),
    ("amd_iommu=off", "CONFIG_IOMMU_DEFAULT_DMA_STRICT=y", True),   # no IOMMU: no translation
])
def test_iommu_offline_as_the_kernel_reads_it(make_root, cmdline: str, config: str,
                                              ok: bool) -> None:
    files = {**KO, "/etc/default/grub": f'GRUB_CMDLINE_LINUX="{cmdline}"\n'}
    if config:
        files["/boot/config-6.1.0-18-amd64"] = f"CONFIG_IOMMU=y\n{config}\n"
    [r] = run_check("iommu.passthrough", make_root(files))
    assert r.status is (Status.PASS if ok else Status.FAIL), r.message
    if "CONFIG_IOMMU_DEFAULT" in config and cmdline == "quiet":
        [_, e] = r.evidence  # the command line, then the config line that decided
        assert (e.kind, e.path, e.line) == ("file", "/boot/config-6.1.0-18-amd64",
                                            config.count("\n") + 2)
