"""1 MiB of one repeated token in every file the readiness rules read: each new rule still
decides (pass, fail, skip or error) within a second, in both modes."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiaudit.core import plugins, ruleset
from aiaudit.core.host import Host
from aiaudit.core.scan import ScanOptions, scan
from tests.helpers import CpuTime

FILES = [
    "etc/sudoers", "etc/sudoers.d/x", "etc/docker/daemon.json",
    "etc/nvidia-container-runtime/config.toml", "etc/apptainer/apptainer.conf",
    "etc/subuid", "etc/subgid", "etc/modprobe.d/x.conf", "etc/modules-load.d/x.conf",
    "etc/modules", "etc/apt/apt.conf", "etc/apt/apt.conf.d/20auto-upgrades",
    "var/lib/dpkg/status", "etc/dnf/automatic.conf", "etc/passwd", "etc/group",
    "var/lib/apt/lists/d_debian-security_dists_bookworm-security_main_binary-amd64_Packages",
    "proc/meminfo", "proc/sys/net/ipv4/tcp_mem", "proc/sys/kernel/threads-max",
    "sys/class/infiniband/mlx5_0/ports/1/state", "sys/class/infiniband/mlx5_0/ports/1/rate",
    "sys/bus/pci/devices/0000:01:00.0/vendor", "sys/bus/pci/devices/0000:01:00.0/class",
    "sys/bus/pci/devices/0000:01:00.0/current_link_speed",
    "sys/bus/pci/devices/0000:01:00.0/max_link_width",
]
NEW = ("gpu.", "pci.", "iommu.", "rdma.", "network.fabric_mtu", "irq.", "accounts.",
       "containers.", "updates.", "time.", "kernel.tcp_mem", "kernel.threads_max")


@pytest.mark.parametrize("unit", ['a=b, "NOPASSWD: ALL" ', "{[ ", "Include a\n"])
def test_megabyte_of_one_token(tmp_path: Path, unit: str) -> None:
    for rel in FILES:
        p = tmp_path / "root" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(unit * ((1 << 20) // len(unit)))
    rs = ruleset.load("dl-training", plugins.registry(), validate=True)
    only = tuple(r.id for r in rs.rules if r.check.id.startswith(NEW))
    for live in (False, True):
        host = Host(str(tmp_path / "root"), live=live)
        with CpuTime() as t:
            run = scan(rs, host, ScanOptions(only=only, user="trainer"))
        assert t.seconds < 20, f"{t.seconds:.1f} s of CPU"
        assert {f.rule_id for f in run.findings} == set(only)
        bad = [(f.rule_id, f.result.message[:100]) for f in run.findings
               if "internal error" in f.result.message or "not evaluated" in f.result.message]
        assert not bad, bad
