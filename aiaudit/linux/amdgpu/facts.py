"""The AMD facts a node-class baseline pins (issue 29's ``aiaudit baseline``): the seam the
baseline command reads, so that it needs no knowledge of sysfs or ROCm.

Each fact is a name, a value and where it was read; offline only what files say (driver,
ROCm) is returned, the rest is live state.  Sources as in :mod:`.devices` and :mod:`.stack`;
``vbios_version``, ``current_compute_partition`` and ``current_memory_partition`` are amdgpu
device attributes (drivers/gpu/drm/amd/amdgpu/amdgpu_atombios.c ``amdgpu_atombios_get_vbios_
version``, amdgpu_xcp / amdgpu_gfx.c partition attributes).
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.pci import sysfs


@record
class Fact:
    """One pinned fact."""

    name: str
    """Dotted name: ``amd.gpu.count``, ``amd.gpu.0000:05:00.0.pcie_width``..."""
    value: str
    evidence: Evidence


def _attr(host: Host, path: str) -> str | None:
    try:
        text = host.read_text(path, cap=4096).strip()
    except HostError:
        return None
    return text or None


def _gpu_facts(host: Host) -> list[Fact]:
    from aiaudit.linux.amdgpu import presence

    out: list[Fact] = []
    gpus = presence.node(host).datacenter or tuple(
        g for g in presence.node(host).gpus if not g.dev.virtfn)
    out.append(Fact("amd.gpu.count", str(len(gpus)),
                    Evidence.runtime("/sys/bus/pci/devices", f"{len(gpus)} AMD GPU(s)")))
    models = sorted({g.name for g in gpus})
    if models:
        out.append(Fact("amd.gpu.model", ", ".join(models),
                        Evidence.runtime(f"{gpus[0].sysfs}/device", f"0x{gpus[0].device:04x}")))
    for g in gpus:
        for attr, name in (("current_link_width", "pcie_width"),
                           ("current_link_speed", "pcie_speed"),
                           ("vbios_version", "vbios"),
                           ("current_compute_partition", "compute_partition"),
                           ("current_memory_partition", "memory_partition")):
            v = _attr(host, f"{g.sysfs}/{attr}")
            if v is None:
                continue
            if attr == "current_link_speed":
                try:
                    sp = sysfs.parse_speed(v)
                except ParseError:
                    continue
                v = f"{sp:g} GT/s" if sp else "unknown"
            out.append(Fact(f"amd.gpu.{g.bdf}.{name}", v,
                            Evidence.runtime(f"{g.sysfs}/{attr}", v)))
    return out


def baseline_facts(host: Host) -> list[Fact]:
    """The AMD facts of the scanned root: GPU count and model, each GPU's PCIe link,
    VBIOS and partition modes (live), the amdgpu driver and the default ROCm release
    (live and offline).  ``[]`` when the root is not an AMD compute node."""
    from aiaudit.linux.amdgpu import presence, stack

    if not presence.node(host).applies:
        return []
    out = _gpu_facts(host) if host.live else []
    k = stack.kmd(host)
    if k.kind != "none":
        out.append(Fact("amd.driver", k.version or k.display, k.evidence))
    installs = stack.rocm_installs(host)
    default = next((i for i in installs if i.default), installs[0] if installs else None)
    if default is not None and default.version:
        out.append(Fact("amd.rocm", default.version, default.evidence))
    return out
