"""Hostile hosts for the issue-28 rules (fabric, links, hand-over, topology): 1 MiB of one
repeated token in every file they read, a FIFO where a counter should be, a huge or
malformed nvidia-smi document: each rule still decides (pass, fail, skip or error) without
an internal error, within bounded CPU time, live and offline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiaudit.core import plugins, ruleset
from aiaudit.core.host import Host
from aiaudit.core.model import Status
from aiaudit.core.scan import ScanOptions, scan
from tests.checks.handover.smihost import SmiHost, capture, run_on
from tests.checks.readiness_trees import gpu_host
from tests.helpers import CpuTime

OURS = ("infiniband.", "handover.", "fabric.", "topology.")
P = "sys/class/infiniband/mlx5_0/ports/1"
FILES = [f"{P}/state", f"{P}/phys_state", f"{P}/rate", f"{P}/link_layer",
         f"{P}/counters/symbol_error", f"{P}/counters/link_downed",
         "proc/driver/nvidia/params", "proc/devices", "proc/sys/kernel/random/boot_id",
         "proc/driver/nvidia/gpus/0000:01:00.0/information",
         "proc/driver/nvidia/capabilities/mig/config",
         "usr/share/nvidia/nvswitch/fabricmanager.cfg", "proc/1/comm",
         "sys/bus/pci/devices/0000:01:00.0/vendor", "sys/bus/pci/devices/0000:01:00.0/class",
         "sys/bus/pci/devices/0000:01:00.0/numa_node"]


@pytest.mark.parametrize("unit", ["4: ACTIVE ", "DeviceFileMode: 1\n", "FABRIC_MODE=",
                                  "\x00\xff"])
def test_megabyte_of_one_token(tmp_path: Path, unit: str) -> None:
    for rel in FILES:
        p = tmp_path / "root" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(unit * ((1 << 20) // len(unit)), errors="surrogateescape")
    fifo = tmp_path / "root" / P / "counters" / "link_error_recovery"
    os.mkfifo(fifo)  # a read would block forever: the Host never opens it
    rs = ruleset.load("dl-training", plugins.registry(), validate=True)
    only = tuple(r.id for r in rs.rules if r.check.id.startswith(OURS))
    assert len(only) == 10  # + NVLINK-LINKS-UP, NVLINK-ERRORS (fabric.nvlink_*)
    for live in (False, True):
        host = Host(str(tmp_path / "root"), live=live)
        with CpuTime() as t:
            run = scan(rs, host, ScanOptions(only=only, user="trainer"))
        assert t.seconds < 20, f"{t.seconds:.1f} s of CPU"
        assert {f.rule_id for f in run.findings} == set(only)
        bad = [(f.rule_id, f.result.message[:100]) for f in run.findings
               if "internal error" in f.result.message or "not evaluated" in f.result.message]
        assert not bad, bad


@pytest.mark.parametrize("doc", [
    "<nvidia_smi_log>" + "<gpu id='x'><processes>" + "<process_info><pid>1</pid><type>C"
    "</type></process_info>" * 20000 + "</processes></gpu></nvidia_smi_log>",
    "<nvidia_smi_log>" + "<gpu/>" * 50000 + "</nvidia_smi_log>",
    "x" * (17 * 1024 * 1024),
])
def test_hostile_nvidia_smi_documents(make_root, doc: str) -> None:
    files, links = gpu_host()
    for check in ("handover.gpu_idle", "handover.mig", "fabric.gpu_state"):
        host = SmiHost(str(make_root(files, links)), doc)
        with CpuTime() as t:
            got = run_on(host, check)
        assert t.seconds < 10
        assert got and all(r.status in (Status.PASS, Status.FAIL, Status.SKIP, Status.ERROR)
                           for r in got)
        assert sum(len(str(r.data)) for r in got) < 50 * 1024 * 1024


def test_a_real_capture_is_cheap(make_root) -> None:
    files, links = gpu_host()
    host = SmiHost(str(make_root(files, links)), capture("telegraf-dual_a5000-v13.xml"))
    with CpuTime() as t:
        for check in ("handover.gpu_idle", "handover.mig", "fabric.gpu_state"):
            run_on(host, check)
    assert t.seconds < 2 and host.calls == 1
