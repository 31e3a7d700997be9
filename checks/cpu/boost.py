"""``cpu.boost``: CPU turbo/boost is not disabled, now and at boot.

Live (Documentation/admin-guide/pm/cpufreq.rst, intel_pstate.rst, amd-pstate.rst):
intel_pstate's ``intel_pstate/no_turbo`` (1 = off), the global ``cpufreq/boost`` (acpi-cpufreq,
amd-pstate; 0 = off) and per-policy ``boost`` (amd-pstate, 6.11+); skipped where the driver
exposes none of them, or without cpufreq.

At boot (:func:`aiaudit.linux.cpu.settings.boost_disabled_at_boot`): enabled services writing
those files, tuned ``[cpu] no_turbo``; the kernel default allows boost.

Gather: :mod:`aiaudit.linux.cpu.cpufreq`, :mod:`aiaudit.linux.cpu.settings`.
Decide: :func:`aiaudit.linux.cpu.cpufreq.boost_state`, :func:`aiaudit.linux.cpu.settings.judge`.
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.api import (
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.cpu import cpufreq, settings
from aiaudit.linux.cpu.cpufreq import CPU, CPUFREQ
from aiaudit.linux.cpu.settings import BootSetting, judge
from aiaudit.linux.rootkind import NO_UNITS, container_skip, image_followup, units_run
from aiaudit.linux.systemd.bootcmds import oneshot_unit

BOOST_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {"persist": {"type": "boolean", "default": True}},
}
BOOST_UNIT = "/etc/systemd/system/aiaudit-cpu-boost.service"


def _now() -> Snippet:
    """Allow boost now (the global ``cpufreq/boost`` also sets every policy's)."""
    return Snippet.command(f"echo 0 > {CPU}/intel_pstate/no_turbo 2>/dev/null; "
                           f"echo 1 > {CPUFREQ}/boost 2>/dev/null; true", "apply now")


def apply_boot() -> Remediation:
    """The fix for drift (nothing disables boost at boot, the running CPUs have it off):
    allow it now, as the kernel does at every boot; nothing to persist."""
    return Remediation("Allow turbo/boost now: nothing disables it at boot (the kernel "
                       "allows it by default), so the boot configuration is already right.",
                       (_now(),))


def _remediation(host: Host, off: list[BootSetting]) -> Remediation:
    """A oneshot unit that allows boost at boot (where systemd boots the root), the same
    now, and the boot settings that disable it left to a person."""
    now = _now()
    manual = (f"remove what disables it at boot: {', '.join(s.source for s in off)}"
              if off else "")
    if not units_run(host):  # a unit would be a file nothing reads
        return Remediation("Allow turbo/boost now, and at boot with this root's init system.",
                           (now,), manual="; ".join(m for m in (manual, NO_UNITS)
                                                    if m))
    return Remediation(
        f"Allow turbo/boost now, and at boot with {BOOST_UNIT}.", (
            Snippet.file(BOOST_UNIT, oneshot_unit(
                "Allow CPU turbo/boost",
                f"[ -e {CPU}/intel_pstate/no_turbo ] && echo 0 > {CPU}/intel_pstate/no_turbo; "
                f"[ -e {CPUFREQ}/boost ] && echo 1 > {CPUFREQ}/boost; true")),
            Snippet.enable(BOOST_UNIT.rsplit("/", 1)[1], "run at boot"), now),
        manual=manual, followup=image_followup(host))


def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the turbo/boost rule: gather the live controls and the boot settings that
    disable boost, decide, report."""
    host = ctx.host
    state, skip = cpufreq.live_state(host)
    skip = container_skip(host, "cpufreq", "CPU turbo/boost") or skip
    if skip:
        yield skip
        return
    bad: dict[str, list[int]] | None = None
    runtime_txt = ""
    ev: list[Evidence] = []
    if state is not None:
        now = cpufreq.boost_state(state)
        if now is None:
            yield Result(Status.SKIP, "cpufreq",
                         f"scaling driver {state.drivers} exposes no turbo/boost control",
                         evidence=(Evidence.runtime(f"{CPUFREQ}/boost", "absent"),))
            return
        bad, ev = now.off, list(now.evidence)
        runtime_txt = ("disabled: " + cpufreq.describe(bad)) if bad else "enabled"
    try:
        off = settings.boost_disabled_at_boot(host)
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "cpufreq", f"boot-time turbo setting cannot be determined: "
                     f"{exc}")
        return
    win = settings.boost_at_boot(off)
    ev += [s.evidence for s in off] if off else [win.evidence]
    v = judge(live=host.live, persist=bool(ctx.params.get("persist", True)),
              what="turbo/boost", want="turbo/boost enabled", state=state, bad=bad,
              runtime_txt=runtime_txt, win=win, explicit=bool(off), boot_ok=not off)
    # off now, nothing disables it at boot: apply the boot state, persist nothing
    yield v.result(ev, apply_boot() if bad and not off else _remediation(host, off))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``cpu.boost``."""
    return [CheckSpec(
        id="cpu.boost", title="CPU turbo/boost is not disabled",
        run=run, params_schema=BOOST_SCHEMA,
        description=(
            "Live: intel_pstate/no_turbo, cpufreq/boost and per-policy boost. Boot: "
            "units writing them, tuned [cpu] no_turbo; the kernel default allows "
            "boost."))]
