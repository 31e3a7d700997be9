"""``handover.mig``: every GPU's MIG mode is settled (current = pending) and, where the rule
says so, the mode and layout the partition expects (live, real ``/`` only).

Gathers ``mig_mode`` and ``mig_devices`` per GPU from ``nvidia-smi -q -x`` (the one run per
scan, :mod:`aiaudit.linux.gpu.mig`).  Decides: a pending mode different from the current
one takes effect only at the next GPU reset (``nvidia-smi -mig`` without a reset, or a
reset that failed because a process held the GPU), so the node runs a layout nobody
chose last: fail.  With ``mode`` set, the current mode must be it; with ``instances`` set
(> 0), an enabled GPU must have that many MIG devices, and with ``instance_memory_mib``
each device at least that much memory (the document names no profile, so a layout is its
count and sizes).  GPUs without MIG (``N/A``) skip unless ``mode`` is ``enabled``.
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
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.linux.gpu import driver, smidoc
from aiaudit.linux.gpu.mig import MigState, mig_states

FIX_PENDING = Remediation("Stop every process on the GPU and reset it (`nvidia-smi -r -i N`) "
                          "or reboot, so the pending MIG mode takes effect; then create the "
                          "partition's instances (nvidia-mig-parted apply).", (
                              Snippet.command("nvidia-smi -r -i <gpu index>",
                                              "reset the GPU: the pending mode applies"),))
FIX_LAYOUT = Remediation("Apply the partition's MIG layout (`nvidia-mig-parted apply -f "
                         "config.yaml -c <name>`, or `nvidia-smi mig -cgi ... -C`).")


def _layout_problem(m: MigState, p: Mapping[str, Any]) -> str | None:
    want_n, want_mem = int(p["instances"]), int(p["instance_memory_mib"])
    if m.current != "Enabled" or not (want_n or want_mem):
        return None
    if want_n and len(m.instances) != want_n:
        return f"{len(m.instances)} MIG device(s), expected {want_n}"
    small = [f"GI {gi}: {mem} MiB" for gi, mem in m.instances
             if want_mem and (mem is None or mem < want_mem)]
    if small:
        return f"MIG devices below {want_mem} MiB: {', '.join(small[:4])}"
    return None


def judge(m: MigState, p: Mapping[str, Any], ev: Evidence) -> Result:
    """One GPU's MIG state against the rule."""
    mode = p["mode"]
    exp = "current = pending" + (f", {mode}" if mode != "any" else "")
    act = f"current {m.current or 'N/A'}, pending {m.pending or 'N/A'}"
    data = {"current": m.current, "pending": m.pending,
            "instances": [{"gpu_instance": gi, "memory_mib": mem} for gi, mem in m.instances]}

    def out(status: Status, msg: str, fix: Remediation | None = None) -> Result:
        return Result(status, m.subject, f"{m.name}: {msg}", expected=exp, actual=act,
                      aspect=Aspect.RUNTIME, evidence=(ev,), data=data,
                      remediation=fix if status is Status.FAIL else None)

    if m.current is None:
        if mode == "enabled":
            return out(Status.FAIL, "has no MIG mode but the partition expects MIG",
                       FIX_LAYOUT)
        return out(Status.SKIP, "no MIG mode (the GPU or driver has no MIG)")
    if m.pending is not None and m.pending != m.current:
        return out(Status.FAIL, f"MIG mode is {m.current} with {m.pending} pending: it "
                   "changes at the next GPU reset", FIX_PENDING)
    if mode != "any" and m.current.lower() != mode:
        return out(Status.FAIL, f"MIG mode is {m.current}, the partition expects {mode}",
                   FIX_LAYOUT)
    problem = _layout_problem(m, p)
    if problem:
        return out(Status.FAIL, f"MIG layout differs: {problem}", FIX_LAYOUT)
    n = f", {len(m.instances)} MIG device(s)" if m.current == "Enabled" else ""
    return out(Status.PASS, f"MIG mode {m.current}, nothing pending{n}")


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per GPU."""
    doc = smidoc.gather(ctx.host, ctx.params, "MIG mode")
    if isinstance(doc, Result):
        yield doc
        return
    ev = smidoc.smi_evidence(doc)
    for m in mig_states(doc):
        yield judge(m, ctx.params, ev)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``handover.mig``."""
    return [CheckSpec(
        id="handover.mig", title="MIG mode settled and as the partition expects",
        run=run, modes=("live",),
        params_schema=driver.schema({
            "mode": {"enum": ["any", "enabled", "disabled"], "default": "any",
                     "description": "the MIG mode every GPU must be in (any: only current "
                                    "= pending is judged)"},
            "instances": {"type": "integer", "minimum": 0, "maximum": 7, "default": 0,
                          "description": "MIG devices each enabled GPU must have (0: not "
                                         "judged)"},
            "instance_memory_mib": {"type": "integer", "minimum": 0, "default": 0,
                                    "description": "least memory of each MIG device (0: "
                                                   "not judged)"},
            "timeout": smidoc.TIMEOUT_SCHEMA}),
        description="Live on the real / only: nvidia-smi -q -x mig_mode current_mig = "
                    "pending_mig on every GPU; with mode, the current mode; with instances "
                    "/ instance_memory_mib, the MIG devices' count and sizes.")]
