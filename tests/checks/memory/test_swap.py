"""memory.swap: /proc/swaps, fstab swap lines, .swap units, zram-generator."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.helpers import run_check

SWAPS_HDR = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"


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


def test_swap_on_now_nothing_configured_is_swapoff_only(make_root) -> None:
    """Drift fix (issue 30): nothing at boot turns swap on, swap is on now: `swapoff -a`
    only, no edit of an fstab without swap lines; configured swap still gets the full
    fix."""
    files = {"/etc/fstab": "UUID=1 / ext4 defaults 0 1\n",
             "/proc/swaps": SWAPS_HDR + "/swapfile file 8388604 0 -2\n"}
    (r,) = run_check("memory.swap", make_root(files), live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.RUNTIME)
    assert [(s.kind, s.content) for s in r.remediation.snippets] == [("command", "swapoff -a")]
    assert "already right" in r.remediation.summary
    files["/etc/fstab"] += "/swapfile none swap sw 0 0\n"
    (r,) = run_check("memory.swap", make_root(files), live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.PERSISTED)
    assert [s.kind for s in r.remediation.snippets] == ["edit", "command"]
