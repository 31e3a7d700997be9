"""memory.thp: live mode, kernel config default, command line, units, tuned [vm]."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.checks.tuning_trees import GRUB_CFG, TUNED_ENABLED, TUNED_LINK
from tests.helpers import run_check

THP = "/sys/kernel/mm/transparent_hugepage"
ENABLED = {"setting": "enabled", "allowed": ["madvise", "always"]}
DEFRAG = {"setting": "defrag", "allowed": ["madvise", "defer+madvise", "defer", "never"]}


def test_thp_enabled_live(make_root) -> None:
    files = {f"{THP}/enabled": "always madvise [never]\n", "/proc/cmdline": "ro\n",
             "/boot/config-6.1.0": "CONFIG_TRANSPARENT_HUGEPAGE_MADVISE=y\n"}
    (r,) = run_check("memory.thp", make_root(files), ENABLED, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME and r.actual == "never"
    assert "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled" in [
        s.content for s in r.remediation.snippets]
    files[f"{THP}/enabled"] = "always [madvise] never\n"
    (r,) = run_check("memory.thp", make_root(files), ENABLED, live=True)
    assert r.status is Status.PASS and "CONFIG" not in r.message and "config-6.1.0:1" in r.message


def test_thp_missing_is_skip(make_root) -> None:
    (r,) = run_check("memory.thp", make_root({"/proc/cmdline": "ro\n"}), ENABLED, live=True)
    assert r.status is Status.SKIP and "no transparent hugepage support" in r.message


def test_thp_enabled_offline_cmdline_and_tuned(make_root) -> None:
    files = {"/boot/grub/grub.cfg": GRUB_CFG % "transparent_hugepage=never"}
    (r,) = run_check("memory.thp", make_root(files), ENABLED)
    assert r.status is Status.FAIL and r.aspect is Aspect.PERSISTED
    assert "update-grub" in [s.content for s in r.remediation.snippets]
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/p/tuned.conf": "[vm]\ntransparent_hugepage=madvise\n",
             "/boot/grub/grub.cfg": GRUB_CFG % "transparent_hugepage=never"}
    (r,) = run_check("memory.thp", make_root(files, TUNED_LINK), ENABLED)
    assert r.status is Status.PASS and "tuned profile p [vm]" in r.message


def test_thp_defrag(make_root) -> None:
    files = {f"{THP}/defrag": "[always] defer defer+madvise madvise never\n"}
    (r,) = run_check("memory.thp", make_root(files), DEFRAG, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    assert r.remediation.snippets[0].path == "/etc/systemd/system/aiaudit-thp-defrag.service"
    (r,) = run_check("memory.thp", make_root({}), DEFRAG)
    assert r.status is Status.PASS and "kernel default" in r.message


def test_thp_enabled_offline_nothing_set_names_what_was_looked_for(make_root) -> None:
    """No kernel config, command line, unit or tuned: a default evidence says what was
    looked for; a kernel config without the THP choice is named instead of 'no config'."""
    (r,) = run_check("memory.thp", make_root({}), ENABLED)
    assert r.status is Status.FAIL
    assert r.message == ("transparent_hugepage/enabled at boot: kernel default unknown: no "
                         "/boot/config-*; nothing makes it one of madvise, always")
    [ev] = r.evidence
    assert (ev.kind, ev.path) == ("default", None)
    assert ev.source.startswith("transparent_hugepage/enabled at boot: no kernel command line "
                                "in boot/loader/entries/*.conf, ")
    assert ev.source.endswith("; no enabled unit writing transparent_hugepage/enabled; no "
                              "tuned [vm] transparent_hugepages (tuned not enabled)")
    assert ev.value == "kernel default unknown: no boot/config-*"
    files = {"/boot/config-6.1.0": "CONFIG_TRANSPARENT_HUGEPAGE=y\n",
             "/boot/grub/grub.cfg": GRUB_CFG % "quiet"}
    (r,) = run_check("memory.thp", make_root(files), ENABLED)
    assert r.status is Status.FAIL
    assert "kernel default unknown: boot/config-6.1.0 has no CONFIG_TRANSPARENT_HUGEPAGE_" \
        in r.message
    [ev] = r.evidence
    assert "no transparent_hugepage= on boot/grub/grub.cfg:" in ev.source
    assert ev.value == ("kernel default unknown: boot/config-6.1.0 has no "
                        "CONFIG_TRANSPARENT_HUGEPAGE_{ALWAYS,MADVISE,NEVER}=y")


def test_thp_kernel_default_is_the_choice_not_a_shmem_option(make_root) -> None:
    """Since 6.14 the shmem default shares the prefix (CONFIG_TRANSPARENT_HUGEPAGE_SHMEM_
    HUGE_*): only ALWAYS, MADVISE and NEVER are the anonymous-memory default."""
    config = ("CONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_TRANSPARENT_HUGEPAGE_SHMEM_HUGE_ALWAYS=y\n"
              "CONFIG_TRANSPARENT_HUGEPAGE_MADVISE=y\n")
    files = {"/boot/config-6.14.0": config, "/boot/grub/grub.cfg": GRUB_CFG % "quiet"}
    (r,) = run_check("memory.thp", make_root(files), ENABLED)
    assert r.status is Status.PASS and "config-6.14.0:3" in r.message
    e = r.evidence[0]
    assert (e.kind, e.path, e.line) == ("file", "/boot/config-6.14.0", 3)
