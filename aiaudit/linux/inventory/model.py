"""The fact record shared by the collectors, the comparison and the baseline writer."""

from __future__ import annotations

from typing import Mapping, Union

from aiaudit.core.startup.records import record

Scalar = Union[str, int, float]
Value = Union[Scalar, Mapping[str, Scalar]]
"""A fact's value: one value for the node, or one per device (``{"0000:3b:00.0": 16}``)."""

COMPARES = ("equal", "tolerance", "per_device", "required_keys")
"""How a node is held to a captured value:

- ``equal``: the same value;
- ``tolerance``: a number within ``tolerance`` (a fraction) of the captured one;
- ``per_device``: each device present on both nodes has the same value (a device missing
  or extra is the count fact's finding, not this one's);
- ``required_keys``: every captured key (a package) is there with the same value; extra
  keys on the node are listed, not failed.
"""


@record
class Fact:
    """One fact of a node and where it was read."""

    name: str
    """Dotted name, e.g. ``gpu.nvidia.count``."""
    title: str
    """What it is, for a rule title: ``NVIDIA GPUs the driver sees``."""
    value: Value
    source: str
    """The file, /proc or /sys path (or glob) the value was read from."""
    live: bool = True
    """Runtime state (/proc, /sys); ``False``: decided by files, offline too."""
    compare: str = "equal"
    tolerance: float = 0.0
    severity: str = "high"
    """The severity a baseline proposes for a difference (the admin may edit it)."""


@record
class Unknown:
    """A fact this scan could not know, and why (a comment in the baseline)."""

    name: str
    reason: str


@record
class Inventory:
    """Every fact gathered in one run, in a stable order, and those left out."""

    facts: tuple[Fact, ...]
    unknown: tuple[Unknown, ...] = ()

    def get(self, name: str) -> Fact | None:
        """The fact called ``name``, if gathered."""
        for f in self.facts:
            if f.name == name:
                return f
        return None

    def values(self) -> dict[str, Value]:
        """``name -> value`` of every gathered fact (what a report records)."""
        return {f.name: f.value for f in self.facts}


@record
class Kind:
    """What a fact is and how a node is held to it: the same for every node, so that a
    class proposed from a fleet's reports compares as one captured from a node."""

    title: str
    compare: str = "equal"
    tolerance: float = 0.0
    severity: str = "high"


KINDS: dict[str, Kind] = {
    "gpu.nvidia.count": Kind("NVIDIA GPUs the driver sees"),
    "gpu.nvidia.model": Kind("Model of each NVIDIA GPU", "per_device"),
    "gpu.nvidia.vbios": Kind("VBIOS of each NVIDIA GPU", "per_device", severity="medium"),
    "gpu.nvidia.driver": Kind("NVIDIA driver version"),
    "gpu.amd.count": Kind("AMD GPUs (Instinct, else every amdgpu device)"),
    "gpu.amd.model": Kind("AMD GPU models"),
    "gpu.amd.vbios": Kind("VBIOS of each AMD GPU", "per_device", severity="medium"),
    "gpu.amd.compute_partition": Kind("Compute partition mode of each AMD GPU (SPX, CPX...)",
                                      "per_device"),
    "gpu.amd.memory_partition": Kind("Memory partition mode of each AMD GPU (NPS1, NPS4...)",
                                     "per_device"),
    "gpu.amd.driver": Kind("amdgpu driver version"),
    "rocm.release": Kind("ROCm release (the default /opt/rocm)", severity="medium"),
    "gpu.pcie.width": Kind("PCIe link width of each GPU (lanes)", "per_device"),
    "gpu.pcie.gen": Kind("PCIe generation each GPU's link can train to", "per_device"),
    "cuda.toolkit": Kind("CUDA toolkit /usr/local/cuda selects", severity="medium"),
    "hca.count": Kind("RDMA adapters (InfiniBand/RoCE)"),
    "hca.port_rate": Kind("Rate of each RDMA port", "per_device"),
    "hca.firmware": Kind("Firmware of each RDMA adapter", "per_device", severity="medium"),
    "memory.total_gib": Kind("Memory the kernel sees (GiB)", "tolerance", 0.02),
    "memory.hugepages": Kind("Huge pages of the default size", severity="medium"),
    "cpu.model": Kind("CPU model"),
    "cpu.sockets": Kind("CPU sockets"),
    "cpu.logical": Kind("Logical CPUs online"),
    "numa.nodes": Kind("NUMA nodes"),
    "nvme.count": Kind("NVMe controllers"),
    "dmi.bios_version": Kind("BIOS version", severity="medium"),
    "dmi.product_name": Kind("System model"),
    "kernel.release": Kind("Kernel release"),
    "kernel.cmdline": Kind("Kernel command line (without BOOT_IMAGE and initrd)"),
    "packages": Kind("Versions of the driver, toolkit, NCCL, container toolkit, Fabric "
                     "Manager, OFED and ROCm packages", "required_keys", severity="medium"),
}
"""Every fact the collectors gather."""


def fact(name: str, value: Value, source: str, live: bool = True) -> Fact:
    """The fact ``name`` (one of :data:`KINDS`) with its value and where it was read."""
    k = KINDS[name]
    return Fact(name, k.title, value, source, live, k.compare, k.tolerance, k.severity)
