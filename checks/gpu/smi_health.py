"""``gpu.smi_health``: nvidia-smi reports a healthy GPU (ECC, pending memory repairs, clock
slowdowns), one result per GPU.

Gathers ``nvidia-smi -q -x`` (run once per scan and shared with the other ``gpu.*`` rules,
only when scanning the real ``/`` live, with a timeout; never from a scanned root), parsed
as XML without entities by :mod:`aiaudit.linux.gpu.nvsmi` (schemas v9 to v13, drivers 384
to 595).  Decides per ``property`` with :mod:`aiaudit.linux.gpu.health`: ``ecc``,
``current_ecc`` Enabled and not pending Disabled; ``memory_errors``, no page retirement,
row remap or repair pending and no remapping failure (NVIDIA's GPU Memory Error Management
guide: a pending one needs a GPU reset, a failure an RMA), and with MIG enabled, where
none of that is reported, the volatile uncorrectable ECC counts; ``throttle``, no HW
slowdown, thermal or power-brake slowdown, no power limit or applications clocks below
their defaults.  A field the GPU reports as N/A gives "not reported" (skip, with the
reason), never a pass.
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
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.host import Host
from aiaudit.linux.gpu import driver, health

if TYPE_CHECKING:
    from aiaudit.linux.gpu import nvsmi

FIXES = {
    "ecc": Remediation("Enable ECC and reset the GPUs (or reboot).", (
        Snippet.command("nvidia-smi -e 1 && nvidia-smi -r", "enable ECC, then reset"),)),
    "memory_errors": Remediation("Drain the node, reset the GPU (`nvidia-smi -r -i N` or "
                                 "reboot); a remapping failure or repeated retirements "
                                 "mean the GPU must be replaced."),
    "throttle": Remediation("Reset application clocks and the power limit to defaults "
                            "(`nvidia-smi -rac`, `nvidia-smi -pl <default>`); for HW "
                            "slowdown, thermal or power-brake slowdowns check cooling, "
                            "PSUs and the board's power-brake signal."),
}

JUDGES = {"ecc": health.ecc, "memory_errors": health.memory_errors}


def smi_query(host: Host, timeout: float) -> nvsmi.SmiLog | Result:
    """``nvidia-smi -q -x`` parsed (once per run, shared by every ``gpu.*`` rule), or an
    error result."""
    from aiaudit.linux.gpu import nvsmi  # nvidia-smi's reader: only past the GPU gate

    got = nvsmi.query(host, timeout)
    if isinstance(got, str):
        return Result(Status.ERROR, "nvidia-smi", got,
                      evidence=(Evidence.command(" ".join(nvsmi.SMI_ARGV)),))
    return got


def judge_gpu(g: nvsmi.GpuHealth, prop: str, reasons: tuple[str, ...]) -> health.Verdict:
    """One GPU judged for property ``prop`` (:mod:`aiaudit.linux.gpu.health`)."""
    if prop == "throttle":
        return health.throttle(g, reasons)
    return JUDGES[prop](g)


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per GPU from ``nvidia-smi -q -x`` (live real root only)."""
    host, p = ctx.host, ctx.params
    blocked = driver.gate(host, p, "gpu health")
    if blocked:
        yield blocked
        return
    if not host.allow_commands:
        yield Result(Status.SKIP, "nvidia-smi", "nvidia-smi is run only when scanning the real "
                     "/ live; it is never run from a scanned root")
        return
    got = smi_query(host, float(p["timeout"]))
    if isinstance(got, Result):
        yield got
        return
    if not got.gpus:
        yield Result(Status.ERROR, "nvidia-smi", "nvidia-smi -q -x listed no GPU")
        return
    from aiaudit.linux.gpu.nvsmi import SMI_ARGV

    shown = " ".join(SMI_ARGV)
    for g in got.gpus:
        v = judge_gpu(g, p["property"], tuple(p["reasons"]))
        yield Result(v.status, f"GPU {g.bus_id}", f"{g.name}: {v.message}",
                     expected=v.expected, actual=v.actual, aspect=Aspect.RUNTIME,
                     evidence=(Evidence.command(shown, f"driver {got.driver_version}, "
                                                f"{got.schema or 'no DOCTYPE'}"),),
                     data={"gpu": g.name, "driver": got.driver_version, **v.data},
                     remediation=FIXES[p["property"]] if v.status is Status.FAIL else None)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.smi_health``."""
    return [CheckSpec(
        id="gpu.smi_health", title="nvidia-smi reports a healthy GPU",
        run=run, modes=("live",),
        params_schema=driver.schema({
            "property": {"enum": ["ecc", "memory_errors", "throttle"]},
            "reasons": {"type": "array", "items": {"type": "string"},
                        "default": list(health.JUDGED_REASONS),
                        "description": "clock event reasons judged: HW slowdown, HW "
                                       "thermal, HW power brake, SW thermal and any other "
                                       "listed reason are findings when active; SW power "
                                       "cap only with a power limit below the default, "
                                       "applications clocks only below their defaults"},
            "timeout": {"type": "number", "minimum": 1, "maximum": 60,
                        "default": 15}}) | {"required": ["property"]},
        description="Live on the real / only: nvidia-smi -q -x (timeout, run once per "
                    "scan), parsed as XML of schema v9 to v13; ecc: current_ecc Enabled "
                    "and not pending Disabled; memory_errors: no pending retirement, row "
                    "remap or repair and no remapping failure (MIG: the volatile "
                    "uncorrectable ECC counts); throttle: no HW slowdown, thermal or "
                    "power brake, no power limit or applications clocks below the "
                    "defaults (SW power cap at the default limit is normal under load); "
                    "N/A fields are 'not reported', never a pass.")]
