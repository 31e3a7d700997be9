"""C-state limits: which mechanism keeps CPUs out of deep idle states now and at the next
boot.

Now (Documentation/admin-guide/pm/cpuidle.rst): a state whose exit latency exceeds the bound
is out of reach when ``disable`` = 1 for that CPU, when a PM QoS resume-latency limit rules it
out, or when tuned holds ``/dev/cpu_dma_latency`` open (``force_latency``; the device is not
read, tuned is trusted when it runs).  States limited away by ``intel_idle.max_cstate``,
``processor.max_cstate`` or ``idle=`` are never registered, so they do not appear.

At boot: the kernel command line (admin-guide/kernel-parameters.txt) — ``idle=poll|halt``,
``cpuidle.off=1``, ``intel_idle.max_cstate=1..N`` (intel_idle; 0 turns intel_idle off,
falling back to acpi_idle), ``processor.max_cstate=N`` (acpi_idle; 0 acts as 1) — tuned
``[cpu] force_latency`` (tuned/plugins/plugin_cpu.py: microseconds, or ``cstate.id:N`` /
``cstate.name:NAME`` with a ``|fallback``), and enabled services running
``cpupower idle-set -D N``.
"""

from __future__ import annotations

import re

from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.parsing import to_int
from aiaudit.core.startup.records import record
from aiaudit.linux import sysfs
from aiaudit.linux.boot.cmdline import BootConfig, CmdlineSource, not_found
from aiaudit.linux.cpu.idle import CPU, CpuIdle, IdleState
from aiaudit.linux.systemd.bootcmds import boot_commands

CMDLINE_PARAMS = ("idle", "cpuidle.off", "intel_idle.max_cstate", "processor.max_cstate")
"""Kernel parameters that limit idle states."""


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def no_cpuidle(src: CmdlineSource) -> str | None:
    """Why a command line leaves no cpuidle driver at all (``idle=poll|halt``,
    ``cpuidle.off=1``), else ``None``."""
    idle = src.get("idle")
    if idle is not None and idle.value in ("poll", "halt"):
        return f"idle={idle.value} (no cpuidle driver: only polling or HLT)"
    off = src.get("cpuidle.off")
    if off is not None and off.value not in (None, "0"):
        return "cpuidle.off=1 (no cpuidle driver)"
    return None


def cmdline_limit(src: CmdlineSource, max_cstate: int, driver: str | None
                  ) -> tuple[bool, str]:
    """(holds, explanation) for the C-state parameters of a command line.  ``driver`` is
    the live cpuidle driver, ``None`` offline (then either driver's limit counts, with a
    caveat)."""
    gone = no_cpuidle(src)
    if gone is not None:
        return True, gone
    ii = _int(getattr(src.get("intel_idle.max_cstate"), "value", None))
    pr = _int(getattr(src.get("processor.max_cstate"), "value", None))
    intel_ok = ii is not None and 1 <= ii <= max_cstate
    acpi_ok = pr is not None and max(pr, 1) <= max_cstate
    parts = []
    if ii is not None:
        parts.append(f"intel_idle.max_cstate={ii}")
    if pr is not None:
        parts.append(f"processor.max_cstate={pr}")
    have = " ".join(parts) or "no C-state parameter"
    if driver == "intel_idle":
        return intel_ok, have + ("" if intel_ok else " (intel_idle is the driver)")
    if driver is not None:
        return acpi_ok, have + ("" if acpi_ok else f" ({driver} is the driver: only "
                                "processor.max_cstate limits it)")
    return _either_driver(have, intel_ok, acpi_ok, ii)


def _either_driver(have: str, intel_ok: bool, acpi_ok: bool, ii: int | None
                   ) -> tuple[bool, str]:
    """Offline, the driver is unknown: a limit of either driver counts, with a caveat."""
    if intel_ok and acpi_ok:
        return True, have
    if intel_ok:
        return True, have + " (limits intel_idle on Intel CPUs; acpi_idle hosts such as AMD " \
                            "also need processor.max_cstate)"
    if acpi_ok and ii == 0:
        return True, have
    if acpi_ok:
        return True, have + " (limits acpi_idle; Intel hosts with intel_idle also need " \
                            "intel_idle.max_cstate)"
    return False, have


@record
class Limiter:
    """A boot mechanism other than the command line that limits idle states."""

    holds: bool
    """True when it keeps CPUs out of every state deeper than the bound."""
    text: str
    evidence: Evidence
    unit: str = ""
    """The unit that applies it when it starts (``tuned.service``, the cpupower one)."""


def force_latency_holds(value: str, bound: int, max_cstate: int, file: str = "",
                        line: int | None = None) -> bool:
    """Whether tuned ``force_latency=value`` (µs, or ``cstate.id:N|fallback`` /
    ``cstate.name:NAME|fallback``, tuned plugin_cpu) keeps CPUs within ``bound`` µs or
    ``max_cstate``."""
    def num(text: str) -> int:
        return to_int(text, what="force_latency", source=file, line=line)

    m = re.fullmatch(r"cstate\.id(?:_no_zero)?:(\d+)(?:\|.*)?", value)
    if value.isdigit():
        return num(value) <= bound
    if m:
        return num(m.group(1)) <= max_cstate
    fb = value.split("|")[-1].strip()
    return fb.isdigit() and num(fb) <= bound


def tuned_latency(host: Host, bound: int, max_cstate: int) -> Limiter | None:
    """tuned ``[cpu] force_latency`` of the active profile (when tuned is enabled)."""
    from aiaudit.linux.rootkind import units_run
    from aiaudit.linux.tuned import profiles as tuned

    if not units_run(host):  # tuned.service is a unit: nothing starts it
        return None
    st = tuned.load(host)
    o = st.get("cpu", "force_latency")
    if o is None:
        return None
    v = o.value.strip()
    return Limiter(force_latency_holds(v, bound, max_cstate, o.file, o.line),
                   f"tuned force_latency={v} ({st.describe()})",
                   Evidence.file(o.file, o.line, f"force_latency={v}"), "tuned.service")


def cpupower_idle(host: Host, bound: int) -> Limiter | None:
    """The last ``cpupower idle-set -D N`` an enabled service runs."""
    cmds, _ = boot_commands(host)
    found = None
    for c in cmds:
        if not (c.argv and c.argv[0].endswith("cpupower") and "idle-set" in c.argv):
            continue
        for i, w in enumerate(c.argv):
            if w in ("-D", "--disable-by-latency") and i + 1 < len(c.argv):
                n = _int(c.argv[i + 1])
                found = Limiter(n is not None and n <= bound,
                                f"{c.unit} runs cpupower idle-set -D {c.argv[i + 1]}",
                                Evidence.file(c.file, c.line, c.text), c.unit)
    return found


# ------------------------------------------------------------------ now
@record
class RuntimeLimit:
    """The C-state limit now."""

    ok: bool
    text: str
    evidence: tuple[Evidence, ...]
    nothing_to_limit: bool = False
    """The driver offers no state deeper than the bound and no command line parameter
    removes states: there is nothing a boot setting must do."""


def _holder(c: CpuIdle, lat: int, disabled: bool, bound: int, tuned: str | None
            ) -> str | None:
    """What keeps CPU ``c`` out of a state of exit latency ``lat``, ``None``: nothing."""
    if disabled:
        return "disabled in cpuidle/stateN/disable"
    if c.qos_us is not None and lat > c.qos_us and c.qos_us <= bound:
        return f"PM QoS resume latency {c.qos_us} µs"
    return tuned


def _usable(state: IdleState, bound: int, tuned: str | None
            ) -> tuple[dict[tuple[str, ...], list[int]], set[str]]:
    """(deep states CPUs can enter -> those CPUs, mechanisms that hold the others)."""
    usable: dict[tuple[str, ...], list[int]] = {}
    mech: set[str] = set()
    for c in state.cpus:
        left = []
        for _, name, lat, dis in c.states:
            if lat <= bound:
                continue
            why = _holder(c, lat, dis, bound, tuned)
            if why is None:
                left.append(f"{name} ({lat} µs)")
            else:
                mech.add(why)
        if left:
            usable.setdefault(tuple(left), []).append(c.cpu)
    return usable, mech


def _without_cpuidle(proc: CmdlineSource | None, max_cstate: int) -> RuntimeLimit | None:
    """No CPU exposes idle states: held when ``/proc/cmdline`` removed the cpuidle driver
    (``idle=``, ``cpuidle.off=``), else ``None`` (no cpuidle, as in most VMs)."""
    if proc is None or (proc.get("idle") is None and proc.get("cpuidle.off") is None):
        return None
    held, why = cmdline_limit(proc, max_cstate, None)
    if not held:
        return None
    return RuntimeLimit(True, f"held: no cpuidle states ({why} on /proc/cmdline)",
                        (proc.evidence("idle"),))


def runtime_limit(state: IdleState, proc: CmdlineSource | None, tuned: Limiter | None,
                  tuned_running: bool, bound: int, max_cstate: int) -> RuntimeLimit | None:
    """The limit now from the live idle states (``None``: no cpuidle and no command line
    parameter that removes it, so the rule does not apply).  ``tuned`` counts only when it
    holds and ``tuned_running``."""
    if not state.cpus:
        return _without_cpuidle(proc, max_cstate)
    held_by_tuned = tuned is not None and tuned.holds and tuned_running
    usable, mech = _usable(state, bound, tuned.text if tuned and held_by_tuned else None)
    nothing = False
    any_deep = any(lat > bound for c in state.cpus for _, _, lat, _ in c.states)
    if not any_deep and proc is not None:
        held, why = cmdline_limit(proc, max_cstate, state.active_driver)
        if held:
            mech.add(f"{why} on /proc/cmdline")
        else:
            nothing = True
    if usable:
        text = "missing: " + "; ".join(
            f"CPUs {sysfs.format_cpulist(cs)} can enter {', '.join(names)}"
            for names, cs in usable.items()) + f" (driver {state.driver})"
    else:
        text = "held" + (f" ({'; '.join(sorted(mech))})" if mech else
                         f" (no state deeper than {bound} µs)")
    ev = [Evidence.runtime(f"{CPU}/cpu*/cpuidle/state*/{{latency,disable}}", text)]
    if held_by_tuned and tuned:
        ev.append(tuned.evidence)
    return RuntimeLimit(not usable, text, tuple(ev), nothing)


# ------------------------------------------------------------------ at boot
@record
class BootLimit:
    """The C-state limit at the next boot."""

    ok: bool
    text: str
    evidence: tuple[Evidence, ...]
    notes: tuple[str, ...]
    """Things a person should know: a regenerated bootloader config that differs, a
    mechanism that does not limit enough."""
    units: tuple[str, ...] = ()
    """The units whose start applies a limit that holds (tuned, a cpupower unit)."""


def _params(src: CmdlineSource) -> list[str]:
    return [str(src.get(n)) for n in CMDLINE_PARAMS]


def _booted(cfg: BootConfig, driver: str | None, max_cstate: int
            ) -> tuple[str | None, str, list[Evidence], list[str]]:
    """(what holds, if anything; the command line's text; evidence; notes) for the command
    line the bootloader will pass."""
    booted = cfg.booted
    if booted is None:
        return None, "no bootloader configuration found", [], []
    ok, why = cmdline_limit(booted, max_cstate, driver)
    decisive = next((n for n in CMDLINE_PARAMS if booted.get(n) is not None), None)
    ev = [booted.evidence(decisive)]
    text = f"{why} on {booted.where(decisive)}"
    notes = []
    gen = cfg.generator
    if gen is not None and gen is not booted and _params(gen) != _params(booted):
        notes.append(f"{gen.where()} has different C-state parameters "
                     f"({cmdline_limit(gen, max_cstate, driver)[1]}): the bootloader config "
                     "was not regenerated")
    return (text if ok else None), text, ev, notes


def boot_limit(cfg: BootConfig, tuned: Limiter | None, cpupower: Limiter | None, *,
               driver: str | None, bound: int, max_cstate: int, nothing_to_limit: bool,
               tuned_lacks: str) -> BootLimit:
    """The limit at the next boot: the command line, tuned, cpupower units.  When nothing
    limits and there is no command line, a ``default`` evidence names what was looked for
    (``tuned_lacks``: why tuned sets no force_latency)."""
    held, text, ev, notes = _booted(cfg, driver, max_cstate)
    held_by = [held] if held else []
    units: list[str] = []
    for extra in (tuned, cpupower):
        if extra is not None:
            ev.append(extra.evidence)
            if extra.holds:
                held_by.append(extra.text)
                units += [extra.unit] if extra.unit else []
            else:
                notes.append(f"{extra.text} does not limit to {bound} µs")
    ok = bool(held_by)
    if not held_by and cfg.booted is None and not nothing_to_limit:
        # no command line, nothing else limits: the kernel's default decides
        looked = [not_found()]
        if tuned is None:
            looked.append(tuned_lacks)
        if cpupower is None:
            looked.append("no enabled unit running cpupower idle-set -D")
        ev.append(Evidence.default(
            "the C-state limit at boot: " + "; ".join(looked),
            "kernel default: every idle state the cpuidle driver registers is usable"))
    if held_by:
        text = "; ".join(held_by)
    elif nothing_to_limit:
        ok = True
        text = (f"nothing to limit: driver {driver} offers no state deeper than "
                f"{bound} µs and no boot parameter removes states")
    return BootLimit(ok, text, tuple(ev), tuple(notes), tuple(units))


def drift(proc: CmdlineSource | None, booted: CmdlineSource | None, driver: str | None,
          max_cstate: int) -> str | None:
    """A note when ``/proc/cmdline`` has other C-state parameters than the command line
    the bootloader will pass."""
    if proc is None or booted is None or _params(proc) == _params(booted):
        return None
    will = cmdline_limit(booted, max_cstate, driver)[1]
    return (f"drift: /proc/cmdline has {cmdline_limit(proc, max_cstate, driver)[1]}"
            f", the bootloader will pass {will}")
