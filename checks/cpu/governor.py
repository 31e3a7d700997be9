"""``cpu.governor``: every CPU uses an allowed cpufreq scaling governor, now and at boot.

Live (Documentation/admin-guide/pm/cpufreq.rst): ``scaling_governor`` of every
``/sys/devices/system/cpu/cpufreq/policyN``, read once per run; offending CPUs are reported
as a compact list (``0-31,64-95``) with the driver.  Without cpufreq (most VMs) the rule is
skipped.

At boot (:mod:`aiaudit.linux.cpu.settings`, later wins): the kernel default
(``cpufreq.default_governor=`` on the command line, else ``CONFIG_CPU_FREQ_DEFAULT_GOV_*``;
intel_pstate and amd-pstate-epp in active mode start in ``powersave`` unless that default is
performance, intel_pstate.rst), ``cpupower.service`` and its configuration, other enabled
services running ``cpupower frequency-set -g`` or writing ``scaling_governor``, and tuned's
``[cpu] governor``.

Gather: :mod:`aiaudit.linux.cpu.cpufreq`, :func:`~aiaudit.linux.cpu.settings.boot_governor`.
Decide: :func:`aiaudit.linux.cpu.settings.judge`.
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
from aiaudit.linux.cpu.cpufreq import CPUFREQ
from aiaudit.linux.cpu.settings import judge
from aiaudit.linux.rootkind import NO_UNITS, cmdline_skip, container_skip, image_followup, units_run
from aiaudit.linux.systemd.bootcmds import oneshot_unit

GOV_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "governors": {"type": "array", "items": {"type": "string", "minLength": 1},
                      "minItems": 1, "default": ["performance"],
                      "description": "allowed scaling governors"},
        "persist": {"type": "boolean", "default": True},
    },
}
GOV_UNIT = "/etc/systemd/system/aiaudit-cpu-governor.service"


def _remediation(host: Host, allowed: list[str]) -> Remediation:
    """A oneshot unit that sets the first allowed governor at boot (where systemd boots the
    root), and the same now on a live host (scanning an image, a command would act on the
    machine it is pasted on); boot settings that set another governor are left to a
    person."""
    gov = allowed[0]
    now = (Snippet.command(f"cpupower frequency-set -g {gov} || echo {gov} | tee "
                           f"{CPUFREQ}/policy*/scaling_governor", "apply now"),
           ) if host.live else ()
    when = "now and at boot" if host.live else "at boot"
    manual = settings.governor_conflicts(host, allowed)
    if not units_run(host):  # a unit would be a file nothing reads
        return Remediation(f"Set the {gov} governor {when} with this root's init system.",
                           now, manual="; ".join([*manual, NO_UNITS]))
    return Remediation(
        f"Set the {gov} governor {when} with a oneshot unit ({GOV_UNIT}).", (
            Snippet.file(GOV_UNIT, oneshot_unit(
                f"CPU frequency governor {gov}",
                f"echo {gov} | tee {CPUFREQ}/policy*/scaling_governor >/dev/null")),
            Snippet.enable(GOV_UNIT.rsplit("/", 1)[1], "run it at boot"), *now,
        ), manual="; ".join(manual), followup=image_followup(host))


def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the governor rule: gather the live policies and the boot governor, decide,
    report."""
    host = ctx.host
    allowed = list(ctx.params["governors"])
    want = "one of " + ", ".join(allowed)
    state, skip = cpufreq.live_state(host)
    skip = container_skip(host, "cpufreq", "the CPU frequency governor") or skip
    if skip:
        yield skip
        return
    try:
        win, ev, explicit = settings.boot_governor(host)
        unknown = settings.cmdline_unknown(host)
        if unknown and not explicit:  # the provisioner's command line decides
            yield cmdline_skip(host, "cpufreq", unknown)
            return
        if win is None:  # nothing sets it, no kernel default known: what was looked for
            ev.append(settings.governor_unknown(host))
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "cpufreq", f"boot-time governor cannot be determined: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    win = settings.active_mode_default(win, explicit, state)
    bad = runtime_txt = None
    if state is not None:
        groups = cpufreq.group(state, lambda p: p.governor or "unknown")
        bad = {g: c for g, c in groups.items() if g not in allowed}
        runtime_txt = f"{cpufreq.describe(groups)} ({state.drivers})"
        ev = [Evidence.runtime(f"{CPUFREQ}/policy*/scaling_governor",
                               cpufreq.describe(groups)), *ev]
    v = judge(live=host.live, persist=bool(ctx.params.get("persist", True)),
              what="scaling governor", want=want, state=state, bad=bad,
              runtime_txt=str(runtime_txt), win=win, explicit=explicit,
              boot_ok=None if win is None else win.value in allowed)
    rem = _remediation(host, allowed) if v.status is Status.FAIL else None
    if bad and win is not None and win.value in allowed:  # the boot setting is right
        gov = win.value
        rem = settings.apply_boot(win, "governor", f"cpupower frequency-set -g {gov} || echo "
                                  f"{gov} | tee {CPUFREQ}/policy*/scaling_governor")
    yield v.result(ev, rem)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``cpu.governor``."""
    return [CheckSpec(
        id="cpu.governor", title="CPUs use the expected frequency governor",
        run=run, params_schema=GOV_SCHEMA,
        description=(
            "Live: scaling_governor of every cpufreq policy (offending CPUs listed "
            "compactly with the driver; skipped without cpufreq). Boot: kernel "
            "default (cpufreq.default_governor=, CONFIG_CPU_FREQ_DEFAULT_GOV_*), "
            "cpupower.service config, enabled units running cpupower frequency-set "
            "or writing scaling_governor, tuned [cpu] governor."))]
