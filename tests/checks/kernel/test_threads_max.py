"""``kernel.threads_max``: threads-max not lowered below the kernel's value for this RAM."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from tests.helpers import run_check

MEM = "MemTotal:       263921664 kB\n"  # 256 GiB: 65980416 pages of 4 KiB


def test_offline_skips(make_root) -> None:
    [r] = run_check("kernel.threads_max", make_root({}))
    assert r.status is Status.SKIP


@pytest.mark.parametrize(("value", "status"), [("2061888", Status.PASS), ("4096", Status.FAIL)])
def test_threads_max(make_root, value: str, status: Status) -> None:
    files = {"/proc/meminfo": MEM, "/proc/sys/kernel/threads-max": value + "\n",
             "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size": "2097152\n"}
    [r] = run_check("kernel.threads_max", make_root(files), live=True)
    assert r.status is status


def test_min_value_raises_the_floor(make_root) -> None:
    files = {"/proc/meminfo": MEM, "/proc/sys/kernel/threads-max": "2061888\n"}
    [r] = run_check("kernel.threads_max", make_root(files), {"min_value": 3000000}, live=True)
    assert r.status is Status.FAIL and r.expected == ">= 3000000"


def test_unreadable_value_is_an_error(make_root) -> None:
    files = {"/proc/meminfo": MEM, "/proc/sys/kernel/threads-max": "many\n"}
    [r] = run_check("kernel.threads_max", make_root(files), live=True)
    assert r.status is Status.ERROR
