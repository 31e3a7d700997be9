"""``cpu.epp``: CPUs prefer performance over energy saving (energy performance preference).

Live: ``energy_performance_preference`` of every cpufreq policy (intel_pstate with HWP,
amd-pstate-epp: Documentation/admin-guide/pm/intel_pstate.rst, amd-pstate.rst); skipped where
the driver has none, or without cpufreq.

At boot (:func:`aiaudit.linux.cpu.settings.boot_epp`): enabled services writing it, tuned
``[cpu] energy_performance_preference``, else forced to performance by a performance boot
governor (intel_pstate and amd-pstate-epp, amd-pstate.c ``amd_pstate_epp_update_limit``),
else the firmware's default preference.

Gather: :mod:`aiaudit.linux.cpu.cpufreq`, :mod:`aiaudit.linux.cpu.settings`.
Decide: :func:`aiaudit.linux.cpu.settings.judge`.
"""

from __future__ import annotations

from typing import Any, Iterator

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
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.cpu import cpufreq, settings
from aiaudit.linux.cpu.cpufreq import CPUFREQ
from aiaudit.linux.cpu.settings import judge
from aiaudit.linux.rootkind import NO_UNITS, cmdline_skip, container_skip, image_followup, units_run
from aiaudit.linux.systemd.bootcmds import oneshot_unit

EPP_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "values": {"type": "array", "items": {"type": "string", "minLength": 1},
                   "minItems": 1, "default": ["performance"],
                   "description": "allowed energy_performance_preference values"},
        "persist": {"type": "boolean", "default": True},
    },
}
EPP_UNIT = "/etc/systemd/system/aiaudit-cpu-epp.service"
EPP_FILES = f"{CPUFREQ}/policy*/energy_performance_preference"


def _remediation(host: Host, val: str) -> Remediation:
    """A oneshot unit that writes ``val`` at boot (where systemd boots the root), and the
    same now on a live host (scanning an image, a command would act on the machine it is
    pasted on)."""
    now = (Snippet.command(f"echo {val} | tee {EPP_FILES}", "apply now"),) if host.live else ()
    when = "now and at boot" if host.live else "at boot"
    if not units_run(host):  # a unit would be a file nothing reads
        return Remediation(f"Set energy_performance_preference to {val} {when} with this "
                           "root's init system.", now, manual=NO_UNITS)
    return Remediation(
        f"Set energy_performance_preference to {val} {when} ({EPP_UNIT}); the "
        "performance governor also forces it.", (
            Snippet.file(EPP_UNIT, oneshot_unit(f"CPU energy performance preference {val}",
                                                f"echo {val} | tee {EPP_FILES} >/dev/null")),
            Snippet.enable(EPP_UNIT.rsplit("/", 1)[1], "run it at boot"), *now),
        followup=image_followup(host))


def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the energy-performance-preference rule: gather the live policies and the
    boot setting, decide, report."""
    host = ctx.host
    allowed = list(ctx.params["values"])
    want = "one of " + ", ".join(allowed)
    state, skip = cpufreq.live_state(host)
    skip = container_skip(host, "cpufreq", "the energy performance preference") or skip
    if skip:
        yield skip
        return
    if state is not None and all(p.epp is None for p in state.policies):
        yield Result(Status.SKIP, "cpufreq",
                     f"scaling driver {state.drivers} has no energy_performance_preference "
                     "(only intel_pstate with HWP and amd-pstate-epp have one)",
                     evidence=(Evidence.runtime(EPP_FILES, "absent"),))
        return
    try:
        win, ev, explicit = settings.boot_epp(host)
        unknown = settings.cmdline_unknown(host)
        if unknown and not explicit:  # the provisioner's command line sets the governor
            yield cmdline_skip(host, "cpufreq", unknown)
            return
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "cpufreq", f"boot-time EPP cannot be determined: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    bad = runtime_txt = None
    if state is not None:
        groups = cpufreq.group(state, lambda p: p.epp)
        bad = {g: c for g, c in groups.items() if g not in allowed}
        runtime_txt = f"{cpufreq.describe(groups)} ({state.drivers})"
        ev = [Evidence.runtime(EPP_FILES, cpufreq.describe(groups)), *ev]
    v = judge(live=host.live, persist=bool(ctx.params.get("persist", True)),
              what="energy performance preference", want=want, state=state, bad=bad,
              runtime_txt=str(runtime_txt), win=win, explicit=explicit,
              boot_ok=None if win is None else win.value in allowed)
    rem = _remediation(host, allowed[0])
    if v.aspect is Aspect.DRIFT and bad and win is not None:  # the boot setting is right
        rem = settings.apply_boot(win, "energy performance preference",
                                  f"echo {win.value} | tee {EPP_FILES}")
    yield v.result(ev, rem)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``cpu.epp``."""
    return [CheckSpec(
        id="cpu.epp", title="CPUs prefer performance over energy saving (EPP)",
        run=run, params_schema=EPP_SCHEMA,
        description=(
            "Live: energy_performance_preference of every policy (skipped where "
            "the driver has none). Boot: units writing it, tuned [cpu] "
            "energy_performance_preference, or forced by the performance governor."))]
