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
