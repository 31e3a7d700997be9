"""``handover.device_nodes``: ``/dev/nvidiactl``, ``/dev/nvidia<N>``, ``/dev/nvidia-uvm``,
``/dev/nvidia-uvm-tools`` and the MIG capability nodes under ``/dev/nvidia-caps`` exist as
the driver makes them (live).

Gathers what the loaded driver asks for (``/proc/driver/nvidia/params``, the GPUs' device
minors, the ``nvidia-uvm`` and ``nvidia-caps`` majors in ``/proc/devices``, the MIG
capability files) and ``stat`` of each node (:mod:`aiaudit.linux.gpu.devnodes`).  Decides
as nvidia-modprobe does: each node is a character device of the right major:minor with the
driver's owner, group and mode.  A missing ``/dev/nvidia-uvm`` makes CUDA report no device
inside containers (which cannot run nvidia-modprobe); a node with a narrower mode (a site
udev rule, a previous job's chmod) denies the next job its GPU.
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
from aiaudit.linux.gpu import devnodes, driver

FIX = Remediation("Recreate the nodes as the driver makes them: `nvidia-modprobe -u -c=0` "
                  "(nvidiactl, nvidia0, nvidia-uvm), `nvidia-modprobe -f "
                  "/proc/driver/nvidia/capabilities/mig/config` (MIG capabilities); remove "
                  "site udev rules or scripts that change their mode.", (
                      Snippet.command("nvidia-modprobe -u -c=0",
                                      "load nvidia-uvm and create the device nodes"),))


def judge(seen: devnodes.Seen) -> Result:
    """One node."""
    w = seen.want
    mode = f" {w.uid}:{w.gid} {w.mode & 0o777:04o}" if w.mode is not None else ""
    exp = (f"char {w.major if w.major is not None else '?'}:{w.minor}{mode}")
    ev = (Evidence.runtime(w.path, seen.actual), Evidence.runtime(w.source))
    if seen.problem is not None:
        return Result(Status.FAIL, w.path, f"{w.path} {seen.problem}", expected=exp,
                      actual=seen.actual, aspect=Aspect.RUNTIME, evidence=ev,
                      remediation=FIX)
    return Result(Status.PASS, w.path, f"{w.path} is {seen.actual}", expected=exp,
                  actual=seen.actual, aspect=Aspect.RUNTIME, evidence=ev)


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per node the driver asks for."""
    host = ctx.host
    if not host.live:
        yield Result(Status.SKIP, "/dev/nvidia*", "device nodes exist only on the running "
                     "system (devtmpfs, nvidia-modprobe); an offline root has none")
        return
    blocked = driver.gate(host, ctx.params, "nvidia device nodes")
    if blocked:
        yield blocked
        return
    if not host.exists(devnodes.PARAMS) and not host.exists(devnodes.GPUS):
        yield Result(Status.SKIP, "/dev/nvidia*", "the NVIDIA kernel module is not loaded "
                     "(no /proc/driver/nvidia): gpu.driver_match and gpu.count judge that",
                     evidence=(Evidence.runtime("/proc/driver/nvidia"),))
        return
    for w in devnodes.wanted(host):
        yield judge(devnodes.inspect(host, w))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``handover.device_nodes``."""
    return [CheckSpec(
        id="handover.device_nodes",
        title="NVIDIA device nodes exist with the driver's owner and mode",
        run=run, modes=("live",), params_schema=driver.schema({}),
        description="Live: /dev/nvidiactl and /dev/nvidia<minor> (195:minor, owner and mode "
                    "from /proc/driver/nvidia/params, default root 0666), /dev/nvidia-uvm "
                    "and -tools (nvidia-uvm major, 0666), /dev/nvidia-caps/nvidia-cap<N> "
                    "for the MIG capabilities (mode from their /proc file).")]
