"""``fabric.gpu_state``: on NVSwitch systems every GPU's NVLink fabric registration is
Completed with status Success and its fabric health names no problem (live, real ``/``).

Gathers the ``fabric`` section of each GPU from ``nvidia-smi -q -x`` (the one run per scan
the ``gpu.*`` rules share; :mod:`aiaudit.linux.gpu.fabric`).  Decides as NVML reports it: a
GPU whose state is Not Started or In Progress has not been registered by Fabric Manager
(CUDA initialisation fails with "system not yet initialized" or waits), Completed with an
error status failed registration, and a degraded-bandwidth or unhealthy-route flag means
NVLink traffic runs slower or over fewer links.  GPUs without a fabric (state N/A: PCIe
cards, GPUs before Hopper, whose registration Fabric Manager does not report) skip.
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.linux.gpu import driver, smidoc
from aiaudit.linux.gpu.fabric import fabric_states

FIX = Remediation("Check Fabric Manager (`systemctl status nvidia-fabricmanager`, "
                  "/var/log/fabricmanager.log); restart it, and if the GPUs stay "
                  "unregistered reset them or reboot the node.", (
                      Snippet.command("systemctl restart nvidia-fabricmanager",
                                      "register the GPUs with the NVLink fabric again"),))


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per GPU."""
    doc = smidoc.gather(ctx.host, ctx.params, "the NVLink fabric state")
    if isinstance(doc, Result):
        yield doc
        return
    ev = smidoc.smi_evidence(doc)
    for f in fabric_states(doc):
        data = {"state": f.state, "status": f.status, "clique": f.clique,
                "cluster_uuid": f.cluster, "health": dict(f.health)}
        act = f"{f.state or 'N/A'} / {f.status or 'N/A'}"
        if not f.on_fabric:
            yield Result(Status.SKIP, f.subject, f"{f.name}: not on an NVLink fabric "
                         "(fabric state N/A)", aspect=Aspect.RUNTIME, evidence=(ev,),
                         data=data)
            continue
        bad = f.problems()
        if bad:
            yield Result(Status.FAIL, f.subject, f"{f.name}: {'; '.join(bad)}",
                         expected="Completed / Success, healthy", actual=act,
                         aspect=Aspect.RUNTIME, evidence=(ev,), data=data, remediation=FIX)
        else:
            yield Result(Status.PASS, f.subject, f"{f.name}: registered with the NVLink "
                         f"fabric ({act})", expected="Completed / Success", actual=act,
                         aspect=Aspect.RUNTIME, evidence=(ev,), data=data)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``fabric.gpu_state``."""
    return [CheckSpec(
        id="fabric.gpu_state", title="Every GPU is registered with the NVLink fabric",
        run=run, modes=("live",),
        params_schema=driver.schema({"timeout": smidoc.TIMEOUT_SCHEMA}),
        description="Live on the real / only: nvidia-smi -q -x fabric/state Completed and "
                    "fabric/status Success on every GPU that reports a fabric (Hopper and "
                    "later on NVSwitch systems); fabric/health flags (degraded bandwidth, "
                    "route recovery, unhealthy route, incorrect configuration) fail.")]
