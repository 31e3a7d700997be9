"""Boot-time rules on each kind of root (issue 27): a container image is not judged, a
stateless image is judged on what it holds and on the command line given with
``--kernel-cmdline`` (not applicable without it), no rule passes on a file nothing reads
(a grub drop-in without grub, a unit without systemd), and a fix only the provisioner can
make is marked for it.

Every test scans through :func:`aiaudit.core.scan.scan` with the shipped ruleset, as the
command line does."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aiaudit.core import plugins, ruleset
from aiaudit.core.host import Host
from aiaudit.core.model import Finding, RunResult, Status
from aiaudit.core.scan import ScanOptions, scan
from aiaudit.core.serialize import run_dict, run_from_dict
from aiaudit.remediate.bundle import build
from tests.helpers import ROOTS

BOOT_RULES = ("CPU-GOVERNOR-PERFORMANCE", "CPU-EPP-PERFORMANCE", "CPU-TURBO-ENABLED",
              "CPU-CSTATE-LATENCY", "MEM-THP-ENABLED", "MEM-THP-DEFRAG",
              "IRQ-BALANCED-OR-PINNED", "IOMMU-PASSTHROUGH")
"""The dl-training rules that judge the next boot (CPU, C-states, THP, IRQ, IOMMU)."""
CMDLINE_RULES = ("CPU-CSTATE-LATENCY", "MEM-THP-ENABLED")
"""Rules of a stateless fixture image that only the kernel command line decides."""
KINDS = ("image-bootable-debian12", "image-container-debian12",
         "image-stateless-warewulf-debian12", "image-stateless-xcat-rocky9")
GIVEN = "BOOT_IMAGE=/vmlinuz quiet"


def _scan(root: Path, *, live: bool = False, **opts: object) -> RunResult:
    rs = ruleset.load("dl-training", plugins.registry())
    return scan(rs, Host(str(root), live=live),
                ScanOptions(only=BOOT_RULES, reraise=True, **opts))  # type: ignore[arg-type]


def _by_rule(run: RunResult) -> dict[str, Finding]:
    return {f.rule_id: f for f in run.findings}


def _copy(case: str, tmp_path: Path) -> Path:
    dst = tmp_path / case
    shutil.copytree(ROOTS / case / "root", dst, symlinks=True)
    return dst


def test_container_image_no_boot_rule_applies() -> None:
    run = _scan(ROOTS / "image-container-debian12" / "root", kernel_cmdline="iommu=pt")
    assert run.host.image_kind == "container"
    for f in run.findings:
        assert f.status is Status.SKIP, (f.rule_id, f.result.message)
        assert f.result.evidence, f.rule_id


@pytest.mark.parametrize("case", ["image-stateless-warewulf-debian12",
                                  "image-stateless-xcat-rocky9"])
def test_stateless_image_without_and_with_the_command_line(case: str) -> None:
    root = ROOTS / case / "root"
    by = _by_rule(_scan(root))
    for rid in CMDLINE_RULES:
        r = by[rid].result
        assert r.status is Status.SKIP and "--kernel-cmdline '...'" in r.message, rid
    # what the image itself holds is judged: boost (the kernel default allows it)
    assert by["CPU-TURBO-ENABLED"].status is Status.PASS
    by = _by_rule(_scan(root, kernel_cmdline=GIVEN))
    assert by["CPU-CSTATE-LATENCY"].status is Status.FAIL
    # THP: Debian's kernel defaults to always (allowed); xCAT's image has no config
    assert by["MEM-THP-ENABLED"].status is (Status.PASS if "warewulf" in case else Status.FAIL)
    for rid in CMDLINE_RULES:
        r = by[rid].result
        if r.status is not Status.FAIL:
            continue
        assert r.remediation is not None and r.remediation.provisioner, rid
        # nothing is installed in the image for it: a file there would be read by nothing
        assert not [s for s in r.remediation.snippets if s.kind in ("file", "enable")], rid
    ok = _by_rule(_scan(root, kernel_cmdline=GIVEN + " intel_idle.max_cstate=1 "
                        "processor.max_cstate=1 transparent_hugepage=madvise"))
    assert ok["CPU-CSTATE-LATENCY"].status is Status.PASS
    assert ok["MEM-THP-ENABLED"].status is Status.PASS
    assert "--kernel-cmdline" in ok["CPU-CSTATE-LATENCY"].result.message


def test_stateless_bundle_data_lists_the_provisioner_steps() -> None:
    """The data a fix bundle reads: the failures whose fix only the provisioner can make
    carry it (``Remediation.provisioner``), through a saved JSON report too, and the
    bundle installs no boot loader file for them."""
    run = _scan(ROOTS / "image-stateless-warewulf-debian12" / "root", kernel_cmdline=GIVEN)
    saved = run_from_dict(run_dict(run))
    assert saved.host.image_kind == "stateless"
    prov = {f.rule_id: f.result.remediation.provisioner for f in saved.findings
            if f.result.remediation is not None and f.result.remediation.provisioner}
    assert set(prov) == {"CPU-CSTATE-LATENCY"}
    assert all(p.startswith("Warewulf: wwctl profile set PROFILE --kernelargs=")
               for p in prov.values())
    b = build(saved)
    assert not [p for p in b.files if p.startswith(("/etc/default/grub", "/boot/"))]
    # the bundle lists them "for the provisioner", among what a rescan still fails
    assert {f.rule_id for f in b.provisioner} == set(prov)
    assert {id(f) for f in b.provisioner} <= {id(f) for f in b.needs_hand()}
    # the image's own fixes (a unit for the governor) carry the rebuild step
    gov = _by_rule(saved)["CPU-GOVERNOR-PERFORMANCE"].result.remediation
    assert gov is not None and "wwctl image build" in gov.followup


OLD_BUNDLE = {
    "/etc/default/grub.d/99-aiaudit.cfg":
        'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT intel_idle.max_cstate=1 '
        'processor.max_cstate=1 transparent_hugepage=madvise iommu=pt"\n',
    "/etc/systemd/system/aiaudit-cpu-governor.service":
        "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo performance | tee "
        "/sys/devices/system/cpu/cpufreq/policy*/scaling_governor'\n"
        "[Install]\nWantedBy=multi-user.target\n",
    "/etc/systemd/system/aiaudit-cpu-epp.service":
        "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo performance | tee "
        "/sys/devices/system/cpu/cpufreq/policy*/energy_performance_preference'\n",
    "/etc/systemd/system/irqbalance.service": "[Service]\nExecStart=/usr/sbin/irqbalance\n",
}
"""What a fix bundle wrote before issue 27 into any root: a grub drop-in and units."""
OLD_LINKS = ("aiaudit-cpu-governor.service", "aiaudit-cpu-epp.service", "irqbalance.service")


def _install_old_bundle(root: Path) -> None:
    for path, text in OLD_BUNDLE.items():
        p = root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    wants = root / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    for unit in OLD_LINKS:
        (wants / unit).symlink_to(f"/etc/systemd/system/{unit}")


@pytest.mark.parametrize("case", KINDS)
def test_no_boot_rule_passes_on_a_file_nothing_reads(case: str, tmp_path: Path) -> None:
    """A grub drop-in and units installed into each kind of root: where nothing reads
    them (a container image; a stateless image's command line), no rule passes on them;
    where something does (systemd in a stateless image, grub on the bootable host), the
    rule may."""
    root = _copy(case, tmp_path)
    before = _by_rule(_scan(root))
    _install_old_bundle(root)
    after = _by_rule(_scan(root))
    kind = _scan(root).host.image_kind
    for rid in BOOT_RULES:
        was, now = before[rid].status, after[rid].status
        if kind == "container":
            assert now is Status.SKIP, (rid, after[rid].result.message)
        elif kind == "stateless" and rid in (*CMDLINE_RULES, "IOMMU-PASSTHROUGH"):
            assert now is was, (rid, after[rid].result.message)
    if kind == "bootable":  # Debian's grub-mkconfig reads the drop-in
        assert after["CPU-CSTATE-LATENCY"].status is Status.PASS
    if kind == "stateless":  # systemd boots the image: its units run
        assert after["CPU-GOVERNOR-PERFORMANCE"].status is Status.PASS
        assert after["IRQ-BALANCED-OR-PINNED"].status is Status.PASS


def test_units_in_a_root_that_does_not_boot_systemd(tmp_path: Path) -> None:
    """A sysvinit root (``/sbin/init`` is sysvinit's): units and .wants links are files
    nothing reads; fixes write none."""
    root = _copy("image-bootable-debian12", tmp_path)
    (root / "usr/sbin/init").unlink()
    (root / "usr/lib/sysvinit").mkdir(parents=True)
    (root / "usr/lib/sysvinit/init").write_text("")
    (root / "usr/sbin/init").symlink_to("/lib/sysvinit/init")
    _install_old_bundle(root)
    run = _scan(root)
    assert run.host.image_kind == "bootable"
    by = _by_rule(run)
    gov = by["CPU-GOVERNOR-PERFORMANCE"].result
    assert gov.status is Status.FAIL and "schedutil" in gov.message
    assert gov.remediation is not None
    assert not [s for s in gov.remediation.snippets if s.kind in ("file", "enable")]
    assert "init is not systemd" in gov.remediation.manual
    irq = by["IRQ-BALANCED-OR-PINNED"].result
    assert irq.status is Status.FAIL and "not systemd" in irq.message
    assert irq.remediation is not None and irq.remediation.snippets == ()
    # an init script linked into a runlevel is what sysvinit runs
    (root / "etc/rc2.d").mkdir(parents=True)
    (root / "etc/rc2.d/S01irqbalance").symlink_to("../init.d/irqbalance")
    (root / "etc/init.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/init.d/irqbalance").write_text("#!/bin/sh\n")
    assert _by_rule(_scan(root))["IRQ-BALANCED-OR-PINNED"].status is Status.PASS
    # the grub drop-in is read (grub on Debian): the C-state limit holds at boot
    assert by["CPU-CSTATE-LATENCY"].status is Status.PASS


def test_image_kind_stated_on_the_command_line(tmp_path: Path) -> None:
    """``--image-kind`` (ScanOptions.image_kind) overrides what the files suggest."""
    root = ROOTS / "image-bootable-debian12" / "root"
    run = _scan(root, image_kind="container")
    assert run.host.image_kind == "container"
    assert run.host.image_kind_reason.startswith("stated with --image-kind")
    assert {f.status for f in run.findings} == {Status.SKIP}
    run = _scan(root, image_kind="stateless")
    assert _by_rule(run)["CPU-CSTATE-LATENCY"].status is Status.SKIP
    from aiaudit.core.errors import UsageError

    with pytest.raises(UsageError, match="--image-kind 'vm': expected one of bootable"):
        _scan(root, image_kind="vm")


def test_live_container_skips_boot_rules(make_root) -> None:
    root = make_root({"/.dockerenv": "", "/proc/cmdline": "ro\n",
                      "/sys/devices/system/cpu/online": "0-3\n",
                      "/sys/devices/system/cpu/cpufreq/policy0/scaling_governor": "powersave\n",
                      "/sys/devices/system/cpu/cpufreq/policy0/affected_cpus": "0 1 2 3\n",
                      "/sys/devices/system/cpu/cpufreq/policy0/scaling_driver": "intel_pstate\n",
                      "/sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n"})
    run = _scan(root, live=True)
    assert run.host.image_kind == "container"
    for f in run.findings:
        assert f.status is Status.SKIP, (f.rule_id, f.result.message)
