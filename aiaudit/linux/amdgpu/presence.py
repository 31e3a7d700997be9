"""Whether the AMD GPU rules apply to the scanned root (:func:`gate`), the rules' common
params (:func:`schema`), and which of them apply only to data center GPUs.

The AMD rules apply to an AMD compute node: live, an Instinct GPU on the PCI bus, or any
AMD GPU with ROCm or AMD's amdgpu-dkms driver installed (a Radeon used for compute);
offline, ROCm or amdgpu-dkms installed.  Every distribution kernel ships amdgpu, and many
workstations have an AMD integrated GPU or a Radeon for the display: neither makes a node
an AMD compute node.  NVIDIA's rules decide for themselves (their own gate), so a node with
both vendors gets both families.
"""

from __future__ import annotations

from typing import Any, Mapping

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence, Remediation, Result, Status
from aiaudit.core.startup.records import record

REQUIRE_GPU: dict[str, Any] = {
    "type": "boolean", "default": False,
    "description": "fail instead of skip when there is no AMD GPU with ROCm (set on AMD "
                   "partitions only: an NVIDIA node has no AMD GPU)"}


def schema(props: Mapping[str, Any]) -> dict[str, Any]:
    """The params schema of an AMD rule: ``require_gpu`` and ``props``."""
    return {"type": "object", "additionalProperties": False,
            "properties": {"require_gpu": REQUIRE_GPU, **props}}


PROC_PCI = "/proc/bus/pci/devices"
"""Every PCI function of every domain, one line each, in one file: ``<bus><devfn>\t
<vendor><device>\t<irq>...`` in hex (drivers/pci/proc.c ``show_device``)."""
_HEX = frozenset("0123456789abcdefABCDEF")


def amd_on_bus(host: Host) -> bool | None:
    """Whether any PCI function may have AMD/ATI's vendor id (0x1002), from the kernel's
    one-file list (:data:`PROC_PCI`, live only): ``False`` lets a node without AMD GPUs
    skip the walk of ``/sys/bus/pci/devices`` (two reads per function, ~1000 functions on a
    large node) in every prolog scan.  ``True`` means "maybe" (a tab and ``1002`` start
    the vendor field of an AMD line, and could start a BAR address of another): the walk
    decides.  ``None`` when the list cannot be read, is empty or is not in the kernel's
    format (``/proc/bus`` masked, a root without it): the walk decides too."""
    try:
        text = host.read_text(PROC_PCI, cap=1024 * 1024)
    except HostError:
        return None
    if "\t1002" in text:
        return True
    first = text.split("\n", 1)[0].split("\t", 2)
    if len(first) < 3 or len(first[0]) != 4 or len(first[1]) != 8 \
            or not _HEX.issuperset(first[0] + first[1]):
        return None
    return False


@record
class AmdNode:
    """What makes the scanned root an AMD compute node.  Each part is looked at only when
    the answer needs it (a live node without AMD GPUs reads no package database)."""

    gpus: tuple[Any, ...]
    """Live: the AMD GPU PCI functions (:class:`~aiaudit.linux.amdgpu.devices.AmdGpu`)."""
    rocm: bool | None
    """ROCm user space is installed (``None``: not looked at, the answer did not need it)."""
    dkms: bool | None
    """AMD's amdgpu-dkms driver is installed (``None``: not looked at)."""
    live: bool
    """Live scan: the PCI bus was looked at."""
    bus: str = "/sys/bus/pci/devices"
    """Where the PCI bus was read (:data:`PROC_PCI` when it showed no AMD function)."""

    @property
    def datacenter(self) -> tuple[Any, ...]:
        """The Instinct GPUs (physical functions)."""
        return tuple(g for g in self.gpus if g.datacenter and not g.dev.virtfn)

    @property
    def applies(self) -> bool:
        """An AMD compute node."""
        return bool(self.datacenter) or (bool(self.rocm or self.dkms)
                                         and (bool(self.gpus) or not self.live))


def _software(host: Host) -> tuple[bool, bool | None]:
    """(ROCm installed, amdgpu-dkms installed: ``None`` when ROCm's files answered)."""
    if host.glob("/opt/rocm*/.info/version"):
        return True, None
    from aiaudit.linux.amdgpu.packages import amd_packages

    pkgs = amd_packages(host)
    return "rocm-core" in pkgs, "amdgpu-dkms" in pkgs


def node(host: Host) -> AmdNode:
    """The AMD facts :func:`gate` decides on (read once per run): live, the PCI bus first
    (no AMD function: nothing else is read), ROCm and amdgpu-dkms only when no Instinct GPU
    decided already; offline, ROCm's files, then the package databases."""

    def load() -> AmdNode:
        gpus: tuple[Any, ...] = ()
        if host.live:
            if amd_on_bus(host) is False:
                return AmdNode((), None, None, True, PROC_PCI)
            from aiaudit.linux.amdgpu.devices import amd_gpus

            gpus = tuple(amd_gpus(host))
            if not gpus or any(g.datacenter and not g.dev.virtfn for g in gpus):
                return AmdNode(gpus, None, None, True)
        rocm, dkms = _software(host)
        return AmdNode(gpus, rocm, dkms, host.live)

    return host.memo(("amdgpu-node",), load)


def _absent(host: Host, n: AmdNode) -> tuple[str, tuple[Evidence, ...]]:
    """Why the AMD rules do not apply, and where that was looked for."""
    ev: list[Evidence] = []
    if n.rocm is not None:
        ev.append(Evidence.default("ROCm: /opt/rocm*/.info/version, package rocm-core",
                                   "installed" if n.rocm else "none found"))
    if n.dkms is not None:
        ev.append(Evidence.default("AMD's amdgpu driver: package amdgpu-dkms",
                                   "installed" if n.dkms else "none found"))
    if host.live:
        none = "no AMD (0x1002) function" if n.bus == PROC_PCI else "no AMD GPU"
        ev.insert(0, Evidence.runtime(n.bus, ", ".join(f"{g.bdf} {g.name}" for g in n.gpus)
                                      or none))
        if n.gpus:
            names = ", ".join(sorted({g.name for g in n.gpus}))
            return (f"the AMD GPU(s) here ({names}) are not data center GPUs and neither ROCm "
                    "nor amdgpu-dkms is installed (a display GPU, not a compute node)",
                    tuple(ev))
        return "no AMD GPU on the PCI bus", tuple(ev)
    return ("no ROCm and no amdgpu-dkms in this root (the in-kernel amdgpu of a "
            "distribution kernel alone does not make an AMD compute node)", tuple(ev))


def gate(host: Host, params: Mapping[str, Any], subject: str = "amdgpu") -> Result | None:
    """A SKIP (or, with ``require_gpu``, a FAIL) when the scanned root is not an AMD
    compute node; ``None`` when the AMD rules apply."""
    n = node(host)
    if n.applies:
        return None
    why, ev = _absent(host, n)
    if params.get("require_gpu"):
        return Result(Status.FAIL, subject, f"{why}, but this ruleset requires AMD GPUs",
                      expected="an AMD GPU with ROCm", actual="none", evidence=ev,
                      remediation=Remediation(
                          "This host must have AMD GPUs: check the hardware and install "
                          "AMD's GPU driver (amdgpu-dkms) and ROCm (amdgpu-install)."))
    return Result(Status.SKIP, subject, f"{why}: AMD GPU rules do not apply")


def datacenter_only(host: Host, what: str, subject: str = "amdgpu") -> Result | None:
    """Live, on a node whose AMD GPUs are all Radeon/APU: a SKIP saying ``what`` is for
    data center GPUs only; ``None`` where an Instinct GPU is present (or offline)."""
    n = node(host)
    if not host.live or n.datacenter:
        return None
    names = ", ".join(sorted({g.name for g in n.gpus})) or "none"
    return Result(Status.SKIP, subject, f"not a data center GPU ({names}): {what}",
                  evidence=tuple(Evidence.runtime(f"/sys/bus/pci/devices/{g.bdf}/class",
                                                  f"0x{g.dev.klass:06x}") for g in n.gpus))
