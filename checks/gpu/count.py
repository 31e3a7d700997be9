"""``gpu.count``: the driver sees the number of GPUs the node should have (live).

Gathers the GPUs the driver has initialised (``/proc/driver/nvidia/gpus/<PCI address>``,
one directory each, created by ``kernel-open/nvidia/nv-procfs.c``) and the NVIDIA display
and 3D controllers on the PCI bus (``/sys/bus/pci/devices/*/vendor`` 0x10de, ``class``
0x0300/0x0302; Documentation/ABI/testing/sysfs-bus-pci): :func:`aiaudit.linux.gpu.stack.gpus`.
Decides: fewer than ``min_count`` GPUs, or a GPU on the bus that the driver does not see
(one that fell off the bus, Xid 79), fails.
"""

from __future__ import annotations

from typing import Iterator

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
from aiaudit.linux.gpu import driver
from aiaudit.linux.gpu import stack as gs


def run(ctx: CheckContext) -> Iterator[Result]:
    """The driver sees the GPUs the node should have (live)."""
    host, p = ctx.host, ctx.params
    blocked = driver.gate(host, p, "gpus")
    if blocked:
        yield blocked
        return
    if not host.live:
        yield Result(Status.SKIP, "gpus", "the GPU count is live state; an offline scan "
                     "cannot see GPUs")
        return
    g = gs.gpus(host)
    seen = list(g.driver or [])
    pci = list(g.pci or [])
    want = p["min_count"]
    ev = tuple(Evidence.runtime(f"/proc/driver/nvidia/gpus/{b}", g.models.get(b))
               for b in seen) or (Evidence.runtime("/proc/driver/nvidia/gpus"),)
    data = {"driver": seen, "pci": pci, "models": dict(g.models)}
    missing = sorted(set(pci) - {b.lower() for b in seen})
    if len(seen) < want or missing:
        lost = (f"; on the PCI bus but not seen by the driver: {', '.join(missing)}"
                if missing else "")
        yield Result(Status.FAIL, "gpus", f"the driver sees {len(seen)} GPU(s), the ruleset "
                     f"requires at least {want}{lost}", expected=f">= {want}",
                     actual=str(len(seen)), aspect=Aspect.RUNTIME, evidence=ev, data=data,
                     remediation=Remediation(
                         "Check `dmesg` for NVRM Xid errors ('fallen off the bus'), the "
                         "driver's ExcludedGpus setting and the hardware; reset or replace the "
                         "missing GPU."))
        return
    yield Result(Status.PASS, "gpus", f"the driver sees {len(seen)} GPU(s) (at least {want} "
                 "required)", expected=f">= {want}", actual=str(len(seen)),
                 aspect=Aspect.RUNTIME, evidence=ev, data=data)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.count``."""
    return [CheckSpec(
        id="gpu.count", title="The driver sees the required number of GPUs",
        run=run, modes=("live",),
        params_schema=driver.schema({"min_count": {"type": "integer", "minimum": 0,
                                                   "default": 1}}),
        description=(
            "Live: /proc/driver/nvidia/gpus/* against min_count and against NVIDIA "
            "display/3D controllers on the PCI bus (a GPU that fell off the bus)."))]
