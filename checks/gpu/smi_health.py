"""``gpu.smi_health``: nvidia-smi reports a healthy GPU (ECC, pending memory repairs, clock
slowdowns), one result per GPU.

Gathers ``nvidia-smi -q -x`` (run once per scan, only when scanning the real ``/`` live,
with a timeout; never from a scanned root), parsed as XML without entities by
:mod:`aiaudit.linux.gpu.nvsmi` (nvsmi_device_v12.dtd; ``clocks_event_reasons`` or the
older ``clocks_throttle_reasons``).  Decides per ``property``: ``ecc``, ``current_ecc``
Enabled and not pending Disabled; ``memory_errors``, no page retirement or row remapping
pending and no remapping failure (NVIDIA's GPU Memory Error Management guide: a pending
one needs a GPU reset, a failure an RMA); ``throttle``, none
of the listed clock event reasons active and the power limit not below its default.
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
from aiaudit.core.errors import CommandError, LiveStateUnavailable, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.gpu import driver, nvsmi

SMI_ARGV = ("nvidia-smi", "-q", "-x")
SW_REASONS = ("applications_clocks_setting", "sw_power_cap", "sw_thermal_slowdown",
              "hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
              "display_clocks_setting")
"""Clock event reasons judged by default (``gpu_idle`` is normal on an idle GPU)."""

FIXES = {
    "ecc": Remediation("Enable ECC and reset the GPUs (or reboot).", (
        Snippet.command("nvidia-smi -e 1 && nvidia-smi -r", "enable ECC, then reset"),)),
    "memory_errors": Remediation("Drain the node, reset the GPU (`nvidia-smi -r -i N` or "
                                 "reboot); a remapping failure or repeated retirements "
                                 "mean the GPU must be replaced."),
    "throttle": Remediation("Reset application clocks and the power limit to defaults "
                            "(`nvidia-smi -rac`, `nvidia-smi -pl <default>`); for thermal "
                            "or power-brake slowdowns check cooling and PSUs."),
}

Judgement = tuple[Status, str, str, str]
"""(status, message, expected, actual)."""


def smi_query(host: Host, timeout: float) -> list[nvsmi.GpuHealth] | Result:
    """``nvidia-smi -q -x`` parsed (once per run), or an error result."""

    def load() -> list[nvsmi.GpuHealth] | Result:
        shown = " ".join(SMI_ARGV)
        try:
            res = host.run(list(SMI_ARGV), timeout=timeout)
        except (CommandError, LiveStateUnavailable) as exc:
            return Result(Status.ERROR, "nvidia-smi", f"nvidia-smi -q -x failed: {exc}",
                          evidence=(Evidence.command(shown),))
        if res.returncode != 0:
            first = (res.stdout.strip() or res.stderr.strip()).splitlines()[:1]
            return Result(Status.ERROR, "nvidia-smi", f"nvidia-smi exited {res.returncode}: "
                          f"{first[0] if first else 'no output'}",
                          evidence=(Evidence.command(shown),))
        try:
            return nvsmi.parse(res.stdout)
        except ParseError as exc:
            return Result(Status.ERROR, "nvidia-smi", f"unexpected nvidia-smi output: {exc}",
                          evidence=(Evidence.command(shown),))

    return host.memo(("nvidia-smi-q-x", timeout), load)


def judge_ecc(g: nvsmi.GpuHealth) -> Judgement:
    """ECC on now and staying on after the next reset."""
    cur, pend = g.ecc_current, g.ecc_pending
    if cur in (None, "N/A"):
        return Status.SKIP, "the GPU has no ECC (N/A)", "Enabled", "N/A"
    if cur == "Enabled" and pend == "Disabled":
        return (Status.FAIL, "ECC is on now but pending Disabled: it turns off at the "
                "next GPU reset", "Enabled", "Enabled, pending Disabled")
    if cur == "Enabled":
        return Status.PASS, "ECC is enabled", "Enabled", "Enabled"
    note = " (pending Enabled: reset the GPU to apply)" if pend == "Enabled" else ""
    return (Status.FAIL, f"ECC is {cur}{note}: memory errors corrupt training silently",
            "Enabled", str(cur))


def judge_memory_errors(g: nvsmi.GpuHealth) -> Judgement:
    """No page retirement or row remapping pending, no remapping failure."""
    bad = []
    if g.pages_pending_blacklist == "Yes" or g.pages_pending_retirement == "Yes":
        bad.append("retired pages pending (reset the GPU to retire them)")
    if g.rows_pending == "Yes":
        bad.append("row remapping pending (reset the GPU)")
    if g.rows_failure == "Yes":
        bad.append("a row remapping failed (RMA the GPU)")
    if bad:
        return Status.FAIL, "; ".join(bad), "nothing pending", "; ".join(bad)
    return (Status.PASS, "no pending page retirement or row remapping and no remapping "
            "failure", "nothing pending", "nothing pending")


def judge_throttle(g: nvsmi.GpuHealth, reasons: tuple[str, ...]) -> Judgement:
    """None of ``reasons`` active and (with ``sw_power_cap``) the power limit not lowered."""
    active = [r for r, on in g.reasons if on and r in reasons]
    limit = ""
    if "sw_power_cap" in reasons and g.power_limit_w and g.default_power_limit_w and \
            g.power_limit_w < g.default_power_limit_w:
        limit = (f"power limit {g.power_limit_w:g} W is below the default "
                 f"{g.default_power_limit_w:g} W")
    if not g.reasons:
        return Status.SKIP, "nvidia-smi reports no clock event reasons", "none", "unknown"
    if active or limit:
        what = ", ".join(active + ([limit] if limit else []))
        return Status.FAIL, f"clocks held down: {what}", "none active", what
    return Status.PASS, "no clock slowdown reason active", "none active", "none"


def judge_gpu(g: nvsmi.GpuHealth, prop: str, reasons: tuple[str, ...]) -> Judgement:
    """(status, message, expected, actual) of one GPU for property ``prop``."""
    if prop == "ecc":
        return judge_ecc(g)
    if prop == "memory_errors":
        return judge_memory_errors(g)
    return judge_throttle(g, reasons)


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
    if not got:
        yield Result(Status.ERROR, "nvidia-smi", "nvidia-smi -q -x listed no GPU")
        return
    for g in got:
        status, msg, exp, act = judge_gpu(g, p["property"], tuple(p["reasons"]))
        yield Result(status, f"GPU {g.bus_id}", f"{g.name}: {msg}", expected=exp, actual=act,
                     aspect=Aspect.RUNTIME, evidence=(Evidence.command(" ".join(SMI_ARGV)),),
                     remediation=FIXES[p["property"]] if status is Status.FAIL else None)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.smi_health``."""
    return [CheckSpec(
        id="gpu.smi_health", title="nvidia-smi reports a healthy GPU",
        run=run, modes=("live",),
        params_schema=driver.schema({
            "property": {"enum": ["ecc", "memory_errors", "throttle"]},
            "reasons": {"type": "array", "items": {"type": "string"},
                        "default": list(SW_REASONS)},
            "timeout": {"type": "number", "minimum": 1, "maximum": 60,
                        "default": 15}}) | {"required": ["property"]},
        description="Live on the real / only: nvidia-smi -q -x (timeout), parsed as "
                    "XML; ecc: current_ecc Enabled and not pending Disabled; "
                    "memory_errors: no pending retirement / row remapping and no "
                    "remapping failure; throttle: no listed clock event reason "
                    "active and the power limit not below the default.")]
