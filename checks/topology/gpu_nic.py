"""``topology.gpu_nic``: each GPU has the RDMA NIC the site pairs it with at its nearest
PCIe distance, and no narrowed link between it and its root port (live).

Gathers the PCI tree, each GPU's ``numa_node`` and each RDMA device's PCI function from
sysfs (:mod:`aiaudit.linux.topology.affinity`; no ``nvidia-smi topo``).  Decides: with
``pairs`` (GPU bus id -> RDMA device), the paired NIC must be present and among the GPU's
nearest; with ``max_level``, the nearest NIC must be at most that far (``PIX`` on HGX
boards, where each GPU shares a PCIe switch with its NIC); a bridge above the GPU whose link
trained narrower than its maximum halves what every GPU below it moves to host memory and to
the NIC (GPUDirect RDMA).  Without ``pairs`` or ``max_level`` the placement is reported
(pass) with the NUMA node and nearest NIC.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

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
from aiaudit.linux.pci.devices import PCI
from aiaudit.linux.topology.affinity import LEVELS, GpuPlace, gpu_places

FIX_PAIR = Remediation("Check that the NIC is present and cabled (ibstat), that the GPU "
                       "and NIC sit in the slots the platform's topology pairs "
                       "(`nvidia-smi topo -m`), and the site's pairs in the rule.")
FIX_LINK = Remediation("Reseat the riser or cable of the PCIe switch; check `lspci -vv` "
                       "LnkSta of the bridge and BIOS bifurcation settings.")


def judge(g: GpuPlace, p: Mapping[str, Any]) -> Result:
    """One GPU against the site's pairing, distance and the links above it."""
    near = ", ".join(g.nearest) or "none"
    where = (f"NUMA node {g.numa if g.numa is not None else 'unknown'}, nearest NIC {near}"
             + (f" ({g.level})" if g.level else ""))
    data = {"numa_node": g.numa, "nearest": list(g.nearest), "level": g.level,
            "levels": dict(g.levels)}
    ev = (Evidence.runtime(f"{PCI}/{g.bdf}/numa_node", str(g.numa if g.numa is not None
                                                          else -1)),
          Evidence.runtime(g.path))
    problems: list[str] = []
    fix = FIX_PAIR
    want = p["pairs"].get(g.bdf)
    if want is not None:
        got = dict(g.levels).get(want)
        if got is None:
            problems.append(f"its paired NIC {want} is missing")
        elif want not in g.nearest:
            problems.append(f"its paired NIC {want} is {got}, farther than {near} "
                            f"({g.level})")
    limit = p["max_level"]
    if limit != "SYS" and (g.level is None or LEVELS.index(g.level) > LEVELS.index(limit)):
        problems.append(f"no NIC within {limit} (nearest: {near}"
                        + (f", {g.level})" if g.level else ")"))
    if p["degraded_links"] and g.degraded:
        fix = FIX_LINK if not problems else fix
        problems += [f"bridge {x.bdf} above it runs x{x.width} of x{x.max_width}"
                     for x in g.degraded[:4]]
    exp = (f"{want} nearest" if want else f"a NIC within {limit}" if limit != "SYS"
           else "no narrowed link above the GPU")
    if problems:
        return Result(Status.FAIL, f"GPU {g.bdf}", f"{where}: {'; '.join(problems)}",
                      expected=exp, actual=where, aspect=Aspect.RUNTIME, evidence=ev,
                      data=data, remediation=fix)
    return Result(Status.PASS, f"GPU {g.bdf}", where, expected=exp, actual=where,
                  aspect=Aspect.RUNTIME, evidence=ev, data=data)


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per GPU."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield Result(Status.SKIP, "topology", "the PCI tree is live state (sysfs); an "
                     "offline root has none")
        return
    places = gpu_places(host)
    if not places:
        yield Result(Status.SKIP, "topology", "no GPU on the PCI bus",
                     evidence=(Evidence.runtime(PCI),))
        return
    known = {g.bdf for g in places}
    for bdf in sorted(set(p["pairs"]) - known):
        yield Result(Status.FAIL, f"GPU {bdf}", f"the rule pairs GPU {bdf} with "
                     f"{p['pairs'][bdf]} but there is no GPU at {bdf}", expected="present",
                     actual="absent", aspect=Aspect.RUNTIME, remediation=FIX_PAIR)
    for g in places:
        yield judge(g, p)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``topology.gpu_nic``."""
    return [CheckSpec(
        id="topology.gpu_nic", title="GPUs sit next to their NICs, behind full-width links",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "pairs": {"type": "object", "default": {},
                      "propertyNames": {"pattern": "^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}"
                                                   "\\.[0-7]$"},
                      "additionalProperties": {"type": "string", "minLength": 1},
                      "description": "GPU PCI address -> the RDMA device it must be "
                                     "nearest to (e.g. 0000:1b:00.0: mlx5_0)"},
            "max_level": {"enum": list(LEVELS), "default": "SYS",
                          "description": "farthest distance allowed to the nearest NIC "
                                         "(PIX, PXB, PHB, NODE; SYS: not judged)"},
            "degraded_links": {"type": "boolean", "default": True,
                               "description": "fail when a bridge above a GPU runs "
                                              "narrower than its maximum width"}}},
        description="Live: from sysfs, each GPU's numa_node and its nearest RDMA NIC (PIX, "
                    "PXB, PHB, NODE, SYS as nvidia-smi topo names them); pairs and "
                    "max_level judge the site's expected GPU-NIC pairing; a bridge above a "
                    "GPU below its maximum link width fails.")]
