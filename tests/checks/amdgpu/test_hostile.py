"""Hostile AMD trees: a FIFO, a huge file, garbage and links in the places the amdgpu checks
read cost only their own result (an error naming the path), never a hang or a crash."""

from __future__ import annotations

import os

from aiaudit.core.model import Status
from tests.checks.amdgpu.trees import DEV, amd_node
from tests.helpers import CpuTime, run_check

RAS = f"{DEV}/0000:10:00.0/ras"


def test_fifo_and_huge_bad_page_tables(make_root) -> None:
    files, links = amd_node(2)
    files[f"{DEV}/0000:11:00.0/ras/gpu_vram_bad_pages"] = "0x1 : 0x1000 : R\n" * 700_000
    root = make_root(files, links)
    fifo = root / RAS.lstrip("/") / "gpu_vram_bad_pages"
    fifo.unlink()
    os.mkfifo(fifo)
    with CpuTime() as t:
        got = run_check("amdgpu.bad_pages", root, live=True)
    assert t.seconds < 5
    assert [r.status for r in got] == [Status.ERROR, Status.ERROR]
    assert all(r.evidence and "gpu_vram_bad_pages" in r.evidence[0].source for r in got)


def test_garbage_kfd_nodes_and_counter_links(make_root) -> None:
    files, links = amd_node(1)
    files["/sys/class/kfd/kfd/topology/nodes/7/properties"] = "\x00" * 100_000
    del files[f"{RAS}/umc_err_count"]
    links[f"{RAS}/umc_err_count"] = "umc_err_count"  # a link to itself
    root = make_root(files, links)
    [r] = run_check("amdgpu.count", root, live=True)
    assert r.status is Status.PASS
    assert any("nodes/7/properties" in (e.value or "") for e in r.evidence)
    [r] = run_check("amdgpu.ras_errors", root, live=True)
    assert r.status is Status.ERROR and "umc_err_count" in r.evidence[0].source


def test_hostile_udev_rules_cost_only_the_access_rule(make_root) -> None:
    files, links = amd_node(1)
    files["/etc/udev/rules.d/99-x.rules"] = ('KERNEL=="kfd", GOTO="x"\n' * 20_000
                                              + 'LABEL="x"\n')
    with CpuTime() as t:
        got = run_check("amdgpu.device_access", make_root(files, links), live=True,
                        user="trainer")
    assert t.seconds < 10 and got and all(r.status is Status.PASS for r in got)
