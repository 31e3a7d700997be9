"""``handover.gpu_idle``: no compute process on any GPU and its memory in use near zero,
before a job gets the node (live, real ``/`` only).

Gathers ``nvidia-smi -q -x`` (the one run per scan every ``gpu.*`` rule shares, with a
timeout; never from a scanned root): per GPU its ``processes`` and
``fb_memory_usage/used`` (:mod:`aiaudit.linux.gpu.processes`).  Decides: a compute process
(type ``C``, ``C+G``, MPS) is a leftover of the previous job (or a job running outside
Slurm) and fails; so does memory in use above ``max_used_mib``, which also catches what the
list cannot show (a process in another PID namespace, memory a crashed context left
allocated).  Graphics processes are listed but do not fail unless ``allow_graphics`` is
false.
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
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.linux.gpu import driver, smidoc
from aiaudit.linux.gpu.processes import GpuUse, gpu_use

FIX = Remediation("Find and stop the leftover processes (`nvidia-smi --query-compute-apps="
                  "pid,process_name,used_memory --format=csv`, `fuser -v /dev/nvidia*`); "
                  "if memory stays allocated without a process, reset the GPU or reboot.", (
                      Snippet.command("nvidia-smi --query-compute-apps=pid,process_name,"
                                      "used_memory --format=csv",
                                      "list the processes holding GPU memory"),))


def judge(g: GpuUse, max_used: int, allow_graphics: bool, ev: Evidence) -> Result:
    """One GPU: no compute (or graphics) process, memory used at most ``max_used`` MiB."""
    bad = [p for p in g.processes if p.compute or not allow_graphics]
    shown = ", ".join(f"{p.name} (pid {p.pid}, {p.type}"
                      + (f", {p.used_mib} MiB)" if p.used_mib is not None else ")")
                      for p in bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
    used = "not reported" if g.used_mib is None else f"{g.used_mib} MiB"
    act = f"{len(bad)} process(es), {used} used"
    exp = f"no {'compute ' if allow_graphics else ''}process, <= {max_used} MiB used"
    data = {"processes": [{"pid": p.pid, "type": p.type, "name": p.name,
                           "used_mib": p.used_mib} for p in g.processes[:16]],
            "used_mib": g.used_mib, "total_mib": g.total_mib}
    if bad:
        return Result(Status.FAIL, g.subject, f"{g.name}: {shown} still on the GPU ({used} "
                      "used): a leftover of the previous job", expected=exp, actual=act,
                      aspect=Aspect.RUNTIME, evidence=(ev,), data=data, remediation=FIX)
    if g.used_mib is not None and g.used_mib > max_used:
        return Result(Status.FAIL, g.subject, f"{g.name}: {used} of GPU memory in use with "
                      "no process listed (a process in another PID namespace, or memory a "
                      "crashed job left allocated)", expected=exp, actual=act,
                      aspect=Aspect.RUNTIME, evidence=(ev,), data=data, remediation=FIX)
    if g.used_mib is None:
        return Result(Status.SKIP, g.subject, f"{g.name}: no process listed and the memory "
                      "in use is not reported", aspect=Aspect.RUNTIME, evidence=(ev,), data=data)
    return Result(Status.PASS, g.subject, f"{g.name}: no compute process, {used} used",
                  expected=exp, actual=act, aspect=Aspect.RUNTIME, evidence=(ev,), data=data)


def job_gpus(ctx: CheckContext) -> set[int] | None:
    """The minor numbers of the GPUs Slurm gave this job (``SLURM_JOB_GPUS``, set in the
    prolog's environment), when the scan is of the real live host; ``None``: all GPUs."""
    import os

    env = ctx.settings.get("env") or os.environ
    raw = str(env.get("SLURM_JOB_GPUS", "")) if ctx.host.allow_commands else ""
    ids = {int(x) for x in raw.split(",") if x.strip().isascii() and x.strip().isdigit()}
    return ids or None


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per GPU (with ``job_gpus_only``, per GPU of the Slurm job)."""
    p = ctx.params
    doc = smidoc.gather(ctx.host, p, "GPU processes")
    if isinstance(doc, Result):
        yield doc
        return
    ev = smidoc.smi_evidence(doc)
    mine = job_gpus(ctx) if p["job_gpus_only"] else None
    for g in gpu_use(doc):
        if mine is not None and g.minor not in mine:
            yield Result(Status.SKIP, g.subject, f"{g.name}: not one of this job's GPUs "
                         f"(SLURM_JOB_GPUS={','.join(map(str, sorted(mine)))}): another "
                         "job may use it", aspect=Aspect.RUNTIME, evidence=(ev,))
            continue
        yield judge(g, int(p["max_used_mib"]), bool(p["allow_graphics"]), ev)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``handover.gpu_idle``."""
    return [CheckSpec(
        id="handover.gpu_idle", title="No process and no memory left on the GPUs",
        run=run, modes=("live",),
        params_schema=driver.schema({
            "max_used_mib": {"type": "integer", "minimum": 0, "default": 256,
                             "description": "GPU memory in use (fb_memory_usage/used, MiB) "
                                            "above which a GPU is not idle; idle GPUs show "
                                            "0-50 MiB, one CUDA context 300 MiB or more"},
            "job_gpus_only": {"type": "boolean", "default": True,
                              "description": "in a Slurm prolog (SLURM_JOB_GPUS set), judge "
                                             "only the job's GPUs: on a shared node the "
                                             "others may belong to running jobs"},
            "allow_graphics": {"type": "boolean", "default": True,
                               "description": "graphics-only processes (Xorg) do not fail"},
            "timeout": smidoc.TIMEOUT_SCHEMA}),
        description="Live on the real / only: nvidia-smi -q -x (run once per scan) lists no "
                    "compute process (type C, C+G, MPS) on any GPU and "
                    "fb_memory_usage/used <= max_used_mib (default 256 MiB).")]
