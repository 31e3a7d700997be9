"""``cpu.cstates``: deep idle states (exit latency above a bound) cannot be entered.

Live (Documentation/admin-guide/pm/cpuidle.rst): for every online CPU, each
``cpuN/cpuidle/stateK`` whose ``latency`` (µs) exceeds ``max_latency_us`` must be off —
``disable`` = 1 for that CPU, or ruled out by a PM QoS limit (``cpuN/power/
pm_qos_resume_latency_us``: ``0`` = no constraint, ``n/a`` = 0 µs, drivers/base/power/
sysfs.c; or tuned's ``force_latency``, which holds ``/dev/cpu_dma_latency`` open —
that device is not read, tuned is trusted when it runs).  States limited away by
``intel_idle.max_cstate``, ``processor.max_cstate`` or ``idle=`` are never registered, so they
do not appear; the result says which mechanism holds.  Without cpuidle (many VMs) the rule
is skipped.

At boot: the kernel command line the bootloader will pass (:mod:`aiaudit.linux.boot.cmdline`) —
``idle=poll|halt``, ``cpuidle.off=1``, ``intel_idle.max_cstate=1..N`` (intel_idle; 0 turns
intel_idle off, falling back to acpi_idle), ``processor.max_cstate=N`` (acpi_idle; 0 acts as
1) — tuned ``[cpu] force_latency`` when tuned is enabled, and enabled services running
``cpupower idle-set -D N``.  Drift: ``/proc/cmdline`` differs from that command line.

Gather: :mod:`aiaudit.linux.cpu.idle` (live states), the command lines, tuned and units.
Decide: :mod:`aiaudit.linux.cpu.cstates` (which mechanism holds now and at boot), then
:func:`aiaudit.core.verdict.verdict`.
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
from aiaudit.core.verdict import verdict
from aiaudit.linux.boot import cmdline as boot
from aiaudit.linux.cpu import cstates
from aiaudit.linux.cpu.cstates import BootLimit, RuntimeLimit
from aiaudit.linux.cpu.idle import CPU, idle_state
from aiaudit.linux.rootkind import cmdline_skip, container_skip
from aiaudit.linux.tuned import profiles as tuned

TUNED_PID = "/run/tuned/tuned.pid"
"""Present while tuned runs (and holds ``/dev/cpu_dma_latency`` for force_latency)."""

SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "max_latency_us": {"type": "integer", "minimum": 0, "default": 10,
                           "description": "idle states with a larger exit latency must be off"},
        "max_cstate": {"type": "integer", "minimum": 0, "default": 1,
                       "description": "largest intel_idle.max_cstate / processor.max_cstate "
                                      "accepted as a boot-time limit"},
        "persist": {"type": "boolean", "default": True},
    },
}


def _runtime(host: Host, bound: int, max_cs: int, proc: boot.CmdlineSource | None
             ) -> tuple[RuntimeLimit | None, Result | None, str | None]:
    """Gather and judge the live state: (limit now, a skip result, the live cpuidle
    driver); offline (``None``, ``None``, ``None``)."""
    if not host.live:
        return None, None, None
    state = idle_state(host, bound)
    tl = None
    running = False
    if state.cpus:
        tl = cstates.tuned_latency(host, bound, max_cs)
        running = tl is not None and tl.holds and host.exists(TUNED_PID)
    now = cstates.runtime_limit(state, proc, tl, running, bound, max_cs)
    if now is None:
        return None, Result(
            Status.SKIP, "cpuidle",
            "no cpuidle: no CPU exposes idle states (cpuidle/current_driver "
            f"is {state.driver or 'absent'}; typical in a VM, where the hypervisor manages "
            "idle)", evidence=(Evidence.runtime(f"{CPU}/cpuidle/current_driver",
                                                state.driver or "absent"),)), None
    return now, None, state.active_driver


def _now(bound: int) -> Snippet:
    """Disable the idle states deeper than ``bound`` µs now, on every CPU."""
    return Snippet.command(
        f"cpupower idle-set -D {bound} || for f in {CPU}/cpu*/cpuidle/state*; do "
        f"[ \"$(cat $f/latency)\" -gt {bound} ] && echo 1 > $f/disable; done",
        "disable deep idle states now")


def _remediation(host: Host, cfg: boot.BootConfig, bound: int, max_cs: int,
                 driver: str | None) -> Remediation:
    """Kernel parameters where the next boot's command line comes from (the boot loader
    found, or the provisioner), and the deep states disabled now; where
    ``/etc/default/grub`` already has a limit that holds and only grub.cfg is stale,
    regenerating grub.cfg instead of adding the parameters again."""
    gen = cfg.generator
    if cfg.loader == "grub" and gen is not None and gen is not cfg.booted and \
            cstates.cmdline_limit(gen, max_cs, driver)[0]:
        regen = ("grub2-mkconfig -o /boot/grub2/grub.cfg" if cfg.booted is not None and
                 cfg.booted.path.startswith("/boot/grub2") else "update-grub")
        return Remediation(
            f"{gen.where()} already limits C-states; grub.cfg was not regenerated since: "
            f"run `{regen}`, then reboot. Now: disable deeper states with "
            f"`cpupower idle-set -D {bound}`.",
            (Snippet.command(regen, "regenerate grub.cfg from /etc/default/grub"),
             *((_now(bound),) if host.live else ())),
            manual=boot.PARAMS_MANUAL)
    params = [f"intel_idle.max_cstate={max(1, max_cs)}", f"processor.max_cstate={max_cs}"]
    return boot.params_remediation(
        host, cfg, params,
        tail=f" Now: disable deeper states with `cpupower idle-set -D {bound}`.",
        now=(_now(bound),))


def apply_boot(then: BootLimit, bound: int) -> Remediation:
    """The fix for drift (the boot limit holds, the running CPUs can enter deep states):
    restart the units that apply the limit when they start (tuned's force_latency, a
    cpupower unit); where only the command line limits, disable the states now through
    sysfs (the next boot applies the command line); no parameter to add."""
    if then.units:
        cmd = "systemctl restart " + " ".join(then.units)
        return Remediation(f"Apply the configured C-state limit: `{cmd}` applies it as at "
                           "boot; the boot configuration is already right.",
                           (Snippet.command(cmd, "apply the limit as at boot"),))
    return Remediation(f"Disable the idle states deeper than {bound} µs now; the command line "
                       "the bootloader passes already limits them (already right) and "
                       "applies at the next boot: nothing to add.", (_now(bound),))


def _result(ctx: CheckContext, now: RuntimeLimit | None, then: BootLimit, notes: list[str],
            cfg: boot.BootConfig, driver: str | None) -> Result:
    """The verdict on the limit now and at boot, with the notes after the message."""
    host, p = ctx.host, ctx.params
    bound = int(p["max_latency_us"])
    want = f"no idle state with exit latency > {bound} µs usable"
    runtime_ok = now.ok if now is not None else None
    runtime_txt = now.text if now is not None else ""
    boot_ok = then.ok
    if host.live and not p.get("persist", True) and runtime_ok:
        boot_ok = True
    status, aspect, msg = verdict(host.live, runtime_ok, boot_ok, boot_set=boot_ok,
                                  what="the C-state limit", runtime_txt=runtime_txt,
                                  boot_txt=then.text, want=want)
    if notes:
        msg += ". " + "; ".join(notes)
    rem = _remediation(host, cfg, bound, int(p["max_cstate"]), driver) \
        if status is Status.FAIL else None
    if status is Status.FAIL and runtime_ok is False and then.ok:  # apply the boot's limit
        rem = apply_boot(then, bound)
    evidence = list(dict.fromkeys((*(now.evidence if now else ()), *then.evidence)))
    return Result(status, "cpuidle", msg, expected=want,
                  actual=runtime_txt if host.live else then.text, aspect=aspect,
                  evidence=tuple(evidence), remediation=rem,
                  data={"boot": then.text, "loader": cfg.loader})


def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the C-state rule: gather the live idle states and the boot configuration,
    decide which mechanism holds now and at boot, report."""
    host, p = ctx.host, ctx.params
    bound, max_cs = int(p["max_latency_us"]), int(p["max_cstate"])
    proc = boot.proc_cmdline(host)
    now, skip, driver = _runtime(host, bound, max_cs, proc)
    skip = container_skip(host, "cpuidle", "the C-state limit") or skip
    if skip is not None:
        yield skip
        return
    try:
        cfg = boot.load(host)
        tl = cstates.tuned_latency(host, bound, max_cs)
        cp = cstates.cpupower_idle(host, bound)
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "cpuidle", f"boot configuration cannot be read: {exc}")
        return
    if cfg.problems:
        yield Result(Status.ERROR, "cpuidle", "boot configuration cannot be read: "
                     + "; ".join(cfg.problems),
                     evidence=(*(now.evidence if now else ()), *cfg.problem_evidence))
        return
    then = cstates.boot_limit(cfg, tl, cp, driver=driver, bound=bound, max_cstate=max_cs,
                              nothing_to_limit=now is not None and now.nothing_to_limit,
                              tuned_lacks=tuned.load(host).lacks("cpu", "force_latency"))
    if cfg.unknown and not then.ok:  # only the provisioner's command line could limit
        yield cmdline_skip(host, "cpuidle", cfg.unknown)
        return
    note = cstates.drift(proc, cfg.booted, driver, max_cs)
    yield _result(ctx, now, then, [*then.notes, *([note] if note else [])], cfg, driver)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``cpu.cstates``."""
    return [CheckSpec(
        id="cpu.cstates", title="Deep CPU idle states are disabled or limited",
        run=run, params_schema=SCHEMA,
        description=(
            "Live: per CPU, every cpuidle state with exit latency above max_latency_us must be "
            "disabled or excluded by PM QoS / tuned force_latency (skipped without cpuidle). "
            "Boot: idle=, cpuidle.off, intel_idle.max_cstate, processor.max_cstate on the "
            "command line the bootloader will pass (BLS entry, grub.cfg, /etc/kernel/cmdline, "
            "/etc/default/grub), tuned force_latency, cpupower idle-set -D units. Drift: "
            "/proc/cmdline differs."))]
