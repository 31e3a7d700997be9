"""Gather a node's class facts once per run (every ``inventory.*`` rule shares them)."""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.inventory.hardware import gpu_facts, hca_facts, platform_facts
from aiaudit.linux.inventory.model import Fact, Inventory, Unknown
from aiaudit.linux.inventory.software import (
    amd_facts,
    driver_facts,
    kernel_facts,
    package_facts,
)

LIVE_ONLY = (
    ("gpu.*", "GPUs, their links and VBIOS are live state (/proc/driver/nvidia, /sys)"),
    ("hca.*", "RDMA adapters, port rates and firmware are live state (/sys/class/infiniband)"),
    ("memory.*, cpu.*, numa.nodes, nvme.count, dmi.*",
     "memory, CPUs, NUMA, NVMe and DMI are live state (/proc, /sys)"),
    ("kernel.cmdline", "the command line the kernel booted with is live state "
     "(/proc/cmdline)"),
)
"""What an offline root cannot say, as the baseline's comment lists it."""


def _gather(host: Host, name: str, fn: object) -> tuple[list[Fact], list[Unknown]]:
    try:
        return fn(host), []  # type: ignore[operator]  # one of the collectors below
    except (HostError, ParseError) as exc:
        return [], [Unknown(name, f"could not read: {exc}")]


def inventory(host: Host) -> Inventory:
    """Every fact this scan can know, in a stable order; offline, the live-only facts are
    listed as unknown with the reason."""

    def load() -> Inventory:
        facts: list[Fact] = []
        unknown: list[Unknown] = []
        collectors: list[tuple[str, object]] = []
        if host.live:
            collectors += [("gpu", gpu_facts), ("hca", hca_facts),
                           ("platform", platform_facts)]
        else:
            unknown += [Unknown(n, r) for n, r in LIVE_ONLY]
        collectors += [("kernel", kernel_facts), ("driver", driver_facts),
                       ("amdgpu", amd_facts), ("packages", package_facts)]
        for name, fn in collectors:
            got, bad = _gather(host, name, fn)
            facts += got
            unknown += bad
        if not host.live and not any(f.name == "kernel.release" for f in facts):
            unknown.append(Unknown("kernel.release", "not exactly one kernel under "
                                   "/lib/modules: the release the node boots is not in "
                                   "the files"))
        return Inventory(tuple(facts), tuple(unknown))

    return host.memo(("inventory",), load)
