"""memory.thp, memory.shm, memory.swap."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.checks.tuning_trees import GRUB_CFG, TUNED_ENABLED, TUNED_LINK
from tests.helpers import run_check

THP = "/sys/kernel/mm/transparent_hugepage"
ENABLED = {"setting": "enabled", "allowed": ["madvise", "always"]}
DEFRAG = {"setting": "defrag", "allowed": ["madvise", "defer+madvise", "defer", "never"]}
SWAPS_HDR = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"


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


def test_shm_live(make_root) -> None:
    base = {"/proc/meminfo": "MemTotal: 16318464 kB\n"}
    files = {**base, "/proc/mounts": "tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n"}
    (r,) = run_check("memory.shm", make_root(files), {"min_size": "40%"}, live=True)
    assert r.status is Status.PASS and "50% of RAM (7.8G)" in r.message
    files["/proc/mounts"] = "tmpfs /dev/shm tmpfs rw,size=65536k 0 0\n"
    (r,) = run_check("memory.shm", make_root(files), {"min_size": "4G"}, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME and r.actual == "64M"
    assert [s.content for s in r.remediation.snippets] == [
        "set-mount tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=4G 0 0",
        "mount -o remount,size=4G /dev/shm"]
    files["/proc/mounts"] = "tmpfs /dev/shm tmpfs rw,size=0k 0 0\n"     # unlimited
    (r,) = run_check("memory.shm", make_root(files), {"min_size": "90%"}, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT     # default 50% at boot
    assert r.message.startswith("/dev/shm size is unlimited now")
    files["/proc/mounts"] = "proc /proc proc rw 0 0\n"
    (r,) = run_check("memory.shm", make_root(files), live=True)
    assert r.status is Status.FAIL and "not mounted" in r.message


def test_shm_offline(make_root) -> None:
    (r,) = run_check("memory.shm", make_root({}), {"min_size": "50%"})
    assert r.status is Status.PASS and "systemd default" in r.message
    fstab = {"/etc/fstab": "tmpfs  /dev/shm  tmpfs  defaults,size=8g  0 0\n"}
    (r,) = run_check("memory.shm", make_root(fstab), {"min_size": "4G"})
    assert r.status is Status.PASS and r.evidence[0].source == "etc/fstab:1"
    (r,) = run_check("memory.shm", make_root(fstab), {"min_size": "16G"})
    assert r.status is Status.FAIL and "replace etc/fstab:1" in r.remediation.summary
    (r,) = run_check("memory.shm", make_root(fstab), {"min_size": "50%"})
    assert r.status is Status.ERROR and "RAM size is unknown" in r.message


def test_swap_live_and_offline(make_root) -> None:
    files = {"/proc/swaps": SWAPS_HDR}
    (r,) = run_check("memory.swap", make_root(files), live=True)
    assert r.status is Status.PASS
    files["/proc/swaps"] += "/dev/zram0 partition 8388604 0 100\n"
    (r,) = run_check("memory.swap", make_root(files), live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME and "/dev/zram0" in r.message
    assert r.remediation.snippets[-1].content == "swapoff -a"
    files = {"/etc/fstab": "/dev/sda2 none swap sw 0 0\n", "/proc/swaps": SWAPS_HDR}
    (r,) = run_check("memory.swap", make_root(files), live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT
    unit = {"/etc/systemd/system/swap.target.wants/dev-sdb1.swap": "[Swap]\nWhat=/dev/sdb1\n"}
    (r,) = run_check("memory.swap", make_root(unit))
    assert r.status is Status.FAIL and "dev-sdb1.swap" in r.message
    assert ("mask", "dev-sdb1.swap") in [(s.kind, s.content) for s in r.remediation.snippets]
    (r,) = run_check("memory.swap", make_root(unit, links={
        "/etc/systemd/system/dev-sdb1.swap": "/dev/null"}))
    assert r.status is Status.PASS, r.message  # masked: it never starts
    (r,) = run_check("memory.swap", make_root({}), {"must_be_off": False})
    assert r.status is Status.SKIP


def test_zram_generator_masked_by_empty_etc_config(make_root) -> None:
    files = {"/usr/lib/systemd/zram-generator.conf": "[zram0]\n",
             "/usr/lib/systemd/system-generators/zram-generator": "#!/bin/sh\n"}
    (r,) = run_check("memory.swap", make_root(files))
    assert r.status is Status.FAIL and "zram0" in r.message
    files["/etc/systemd/zram-generator.conf"] = "# none\n"
    (r,) = run_check("memory.swap", make_root(files))
    assert r.status is Status.PASS


def test_fstab_remediation_edits_fstab_in_place(make_root) -> None:
    """The remediation edits /etc/fstab in place (an edit snippet, also under ROOT=)."""
    from aiaudit.core import edits

    text = ("UUID=1 / ext4 defaults 0 1\ntmpfs /dev/shm tmpfs size=64m 0 0\n"
            "# tmpfs /dev/shm tmpfs x 0 0\n/swapfile none swap sw 0 0\n")
    root = make_root({"/etc/fstab": text, "/proc/swaps": SWAPS_HDR,
                      "/proc/meminfo": "MemTotal: 16318464 kB\n",
                      "/proc/mounts": "tmpfs /dev/shm tmpfs rw,size=65536k 0 0\n"})
    ops = []
    for check, params in (("memory.shm", {"min_size": "50%"}), ("memory.swap", {})):
        (r,) = run_check(check, root, params, live=True)
        ops += [s.content for s in r.remediation.snippets
                if s.kind == "edit" and s.path == "/etc/fstab"]
    assert len(ops) == 2 and all(edits.valid(op) for op in ops)
    for op in ops:
        text = edits.apply(op, text)
    assert text.splitlines() == [
        "UUID=1 / ext4 defaults 0 1", "#tmpfs /dev/shm tmpfs size=64m 0 0",
        "# tmpfs /dev/shm tmpfs x 0 0", "#/swapfile none swap sw 0 0",
        "tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=50% 0 0"]
    for op in ops:  # idempotent
        assert edits.apply(op, text) == text


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
