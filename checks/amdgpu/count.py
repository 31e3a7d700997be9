"""``amdgpu.count``: ROCm sees the number of AMD GPUs the node should have (live).

Gathers the AMD GPU functions on the PCI bus (vendor 0x1002 in the classes amdgpu binds,
virtual functions left out; on a node with Instinct GPUs only those) and the GPUs the
kernel's ROCm driver (KFD) initialised, from its topology
(``/sys/class/kfd/kfd/topology/nodes/*/properties``: what every ROCm program enumerates):
:mod:`aiaudit.linux.amdgpu.devices`.  With compute partitioning (MI300 CPX...) one GPU is
several KFD nodes; they are counted once.  Decides: fewer GPUs than ``min_count``, or a GPU
on the PCI bus that KFD does not list (the driver did not initialise it: a firmware or RAS
failure, its retired pages over the threshold, or another driver bound), fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Status,
    hookimpl,
)
from aiaudit.linux.amdgpu import presence

if TYPE_CHECKING:  # imported in run(), once the AMD rules apply (prolog start-up cost)
    from aiaudit.linux.amdgpu.devices import AmdGpu, Kfd

FIX = Remediation("Check `dmesg` for amdgpu errors (firmware load, RAS, 'bad page threshold'), "
                  "the driver bound to the GPU (`lspci -k`), and the hardware; reset or "
                  "replace the missing GPU, then reload amdgpu or reboot.")


def _counted(gpus: list[AmdGpu]) -> list[AmdGpu]:
    """The GPUs that should be usable: physical functions; only Instinct ones where the
    node has any (a BMC or display GPU is not a compute GPU)."""
    phys = [g for g in gpus if not g.dev.virtfn]
    dc = [g for g in phys if g.datacenter]
    return dc or phys


def _evidence(kfd: Kfd, missing: list[AmdGpu]) -> tuple[Evidence, ...]:
    """The KFD GPU nodes (at most 16), the functions KFD lacks, unreadable nodes."""
    from aiaudit.linux.amdgpu.devices import KFD_NODES

    ev = [Evidence.runtime(f"{KFD_NODES}/{n.node}/properties",
                           f"location {n.bdf}, {n.gfx}, device_id {n.device_id}")
          for n in kfd.gpus[:16]] or [Evidence.runtime(KFD_NODES, "absent" if not kfd.present
                                                       else "no GPU node")]
    ev += [Evidence.runtime(f"{g.sysfs}/driver", g.driver or "no driver bound")
           for g in missing]
    ev += [Evidence.runtime(KFD_NODES, pr) for pr in kfd.problems[:4]]
    return tuple(ev)


def run(ctx: CheckContext) -> Iterator[Result]:
    """ROCm sees the GPUs the node should have."""
    host, p = ctx.host, ctx.params
    blocked = presence.gate(host, p, "gpus")
    if blocked:
        yield blocked
        return
    if not host.live:
        yield Result(Status.SKIP, "gpus", "the GPU count is live state; an offline scan cannot "
                     "see GPUs")
        return
    from aiaudit.linux.amdgpu.devices import amd_gpus, kfd_topology

    gpus = _counted(amd_gpus(host))
    kfd = kfd_topology(host)
    seen = sorted({n.physical for n in kfd.gpus})
    parts = len(kfd.gpus)
    missing = [g for g in gpus if g.bdf.rsplit(".", 1)[0] not in seen]
    want = p["min_count"]
    ev = _evidence(kfd, missing)
    data = {"kfd_gpus": seen, "kfd_nodes": parts, "pci": [g.bdf for g in gpus],
            "models": {g.bdf: g.name for g in gpus}}
    extra = f" ({parts} KFD nodes: compute partitions)" if parts > len(seen) else ""
    if len(seen) < want or missing:
        lost = ("; on the PCI bus but not initialised by ROCm's kernel driver: "
                + ", ".join(f"{g.bdf} ({g.name}, driver {g.driver or 'none'})" for g in missing)
                if missing else "")
        nokfd = "" if kfd.present else " (no KFD topology: amdgpu is not loaded)"
        yield Result(Status.FAIL, "gpus", f"ROCm sees {len(seen)} GPU(s){extra}{nokfd}, the "
                     f"ruleset requires at least {want}{lost}", expected=f">= {want}",
                     actual=str(len(seen)), aspect=Aspect.RUNTIME, evidence=ev,
                     data=data, remediation=FIX)
        return
    yield Result(Status.PASS, "gpus", f"ROCm sees {len(seen)} GPU(s){extra} (at least {want} "
                 "required)", expected=f">= {want}", actual=str(len(seen)),
                 aspect=Aspect.RUNTIME, evidence=ev, data=data)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``amdgpu.count``."""
    return [CheckSpec(
        id="amdgpu.count", title="ROCm sees the required number of AMD GPUs",
        run=run, modes=("live",),
        params_schema=presence.schema({"min_count": {"type": "integer", "minimum": 0,
                                                     "default": 1}}),
        description="Live: the GPUs of the KFD topology (/sys/class/kfd/kfd/topology) "
                    "against min_count and against the AMD GPUs on the PCI bus (one the "
                    "driver did not initialise).")]
