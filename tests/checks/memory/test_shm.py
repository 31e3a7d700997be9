"""memory.shm: /proc/mounts, /etc/fstab, systemd default; the fstab edit of the fix."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.helpers import run_check

SWAPS_HDR = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"


def test_shm_live(make_root) -> None:
    base = {"/proc/meminfo": "MemTotal: 16318464 kB\n"}
    files = {**base, "/proc/mounts": "tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n"}
    (r,) = run_check("memory.shm", make_root(files), {"min_size": "40%"}, live=True)
    assert r.status is Status.PASS and "50% of RAM (7.8G)" in r.message
    files["/proc/mounts"] = "tmpfs /dev/shm tmpfs rw,size=65536k 0 0\n"
    (r,) = run_check("memory.shm", make_root(files), {"min_size": "4G"}, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME and r.actual == "64M"
    # the boot's default mount (half of RAM, 7.8G) is right: remount as at boot, no edit
    assert [s.content for s in r.remediation.snippets] == [
        "mount -o remount,size=50% /dev/shm"]
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


RAM16G = {"/proc/meminfo": "MemTotal: 16318464 kB\n"}


def test_shm_drift_remounts_with_the_fstab_size(make_root) -> None:
    """Drift fix (issue 30): /etc/fstab mounts /dev/shm with 8g, it is mounted with 64M now:
    remount with the fstab's size (util-linux merges the fstab line's options on a remount;
    the size is explicit because a remount without size= keeps the current one: both
    checked with util-linux 2.38.1 mount -T on a tmpfs), and edit nothing."""
    files = {**RAM16G, "/etc/fstab": "tmpfs /dev/shm tmpfs defaults,size=8g 0 0\n",
             "/proc/mounts": "tmpfs /dev/shm tmpfs rw,size=65536k 0 0\n"}
    (r,) = run_check("memory.shm", make_root(files), {"min_size": "4G"}, live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT)
    assert "boot configuration" in r.message and "is right" in r.message
    assert [(s.kind, s.content) for s in r.remediation.snippets] == [
        ("command", "mount -o remount,size=8g /dev/shm")]
    assert "etc/fstab:1" in r.remediation.summary and "already right" in r.remediation.summary
    files["/proc/mounts"] = "proc /proc proc rw 0 0\n"     # not mounted: mount it
    (r,) = run_check("memory.shm", make_root(files), {"min_size": "4G"}, live=True)
    assert [s.content for s in r.remediation.snippets] == ["mount /dev/shm"]
    # the fstab size is too small too: the fstab edit and the resize
    (r,) = run_check("memory.shm", make_root(files), {"min_size": "10G"}, live=True)
    assert r.aspect is Aspect.PERSISTED
    assert [s.kind for s in r.remediation.snippets] == ["edit", "command"]
