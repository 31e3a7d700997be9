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
"""

from __future__ import annotations

import re
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
from aiaudit.core.parsing import to_int
from aiaudit.core.records import record
from aiaudit.core.verdict import verdict
from aiaudit.linux import sysfs
from aiaudit.linux.boot import cmdline as boot
from aiaudit.linux.sysfs import read_opt
from aiaudit.linux.systemd.bootcmds import boot_commands
from aiaudit.linux.tuned import profiles as tuned

CPU = "/sys/devices/system/cpu"
CMDLINE_PARAMS = ("idle", "cpuidle.off", "intel_idle.max_cstate", "processor.max_cstate")

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


@record
class CpuIdle:
    """Idle states of one CPU."""

    cpu: int
    states: tuple[tuple[str, str, int, bool], ...]
    """(state dir, name, exit latency µs, disabled); ``disabled`` is read only for states
    deeper than the bound (the only ones the rule looks at)."""
    qos_us: int | None
    """Resume-latency limit (``None`` = no constraint, or not read because no deep state of
    this CPU is enabled)."""


@record
class IdleState:
    """Live cpuidle state of the host."""

    driver: str | None
    cpus: tuple[CpuIdle, ...]


def idle_state(host: Host, bound: int) -> IdleState:
    """Read cpuidle once per run and bound (memoized)."""
    return host.memo(("cpuidle", bound), lambda: _idle_state(host, bound))


def _driver_states(host: Host, base: str, listing: list[str]) -> list[tuple[str, str, int]]:
    """(dir, name, latency) of the ``stateN`` directories of one CPU's ``cpuidle``."""
    out = []
    for st in listing:
        if not st.startswith("state"):
            continue
        lat = read_opt(host, f"{base}/{st}/latency")
        if lat is None or not lat.isdigit():
            continue
        out.append((st, read_opt(host, f"{base}/{st}/name") or st,
                    to_int(lat, what="latency", source=f"{base}/{st}/latency")))
    return out


def _qos(raw: bytes | HostError) -> int | None:
    txt = sysfs.attr(raw)
    return 0 if txt == "n/a" else (to_int(txt, what="PM QoS latency")
                                   if txt and txt.isdigit() and txt != "0" else None)


def _cpus_idle(host: Host, table: list[tuple[int, list[tuple[str, str, int]]]], bound: int
               ) -> list[CpuIdle]:
    """Each (CPU, its driver's states): ``disable`` of each state deeper than ``bound``
    and, where one of them is enabled, the PM QoS limit (two batches of reads)."""
    paths = [f"{CPU}/cpu{c}/cpuidle/{st}/disable"
             for c, states in table for st, _, lat in states if lat > bound]
    raw = iter(host.read_many(paths))
    rows = [(c, tuple((st, name, lat, lat > bound and sysfs.attr_is(next(raw), "1"))
                      for st, name, lat in states)) for c, states in table]
    want_qos = [c for c, out in rows if any(lat > bound and not dis for _, _, lat, dis in out)]
    qos = dict(zip(want_qos, host.read_many(
        [f"{CPU}/cpu{c}/power/pm_qos_resume_latency_us" for c in want_qos]), strict=True))
    return [CpuIdle(c, out, _qos(qos[c]) if c in qos else None) for c, out in rows]


def _idle_state(host: Host, bound: int) -> IdleState:
    """One listing of ``cpuidle`` per CPU, ``name``/``latency`` per state for the first CPU
    only: drivers/cpuidle/sysfs.c ``cpuidle_add_state_sysfs`` gives every CPU driven by one
    cpuidle driver the directories ``state0`` .. ``state{drv->state_count - 1}``, whose
    ``name`` and ``latency`` show ``drv->states[i]`` (the driver's table), while
    ``disable`` shows the CPU's own ``states_usage[i]``.  So ``disable`` (deep states) and
    ``power/pm_qos_resume_latency_us`` are read per CPU, the rest once.  With
    ``CONFIG_CPU_IDLE_MULTIPLE_DRIVERS`` (ARM big.LITTLE: each CPU's ``cpuidle/driver/``
    directory exists, ``cpuidle_add_driver_sysfs``) CPUs may have different tables, so every
    CPU is read in full; so is a CPU whose ``stateN`` listing differs from the first one's
    (not a kernel layout, but a tree can be anything)."""
    driver = read_opt(host, f"{CPU}/cpuidle/current_driver")
    try:
        online = sysfs.parse_cpulist(read_opt(host, f"{CPU}/online") or "")
    except ParseError:
        online = []
    # one listing resolves every cpuN directory (one lstat each otherwise)
    cpu_dirs = host.listdir(CPU, resolve_dirs=True)
    if not online:
        online = sorted(int(n[3:]) for n in cpu_dirs if re.fullmatch(r"cpu\d+", n))
    table: list[tuple[int, list[tuple[str, str, int]]]] = []
    shared: list[tuple[str, str, int]] | None = None
    shared_dirs: list[str] = []
    for c in online:
        base = f"{CPU}/cpu{c}/cpuidle"
        listing = host.listdir(base, resolve_dirs=True)
        dirs = [n for n in listing if n.startswith("state")]
        if shared is not None and dirs == shared_dirs and "driver" not in listing:
            table.append((c, shared))
            continue
        states = _driver_states(host, base, listing)
        if not states:
            continue
        if shared is None and "driver" not in listing:
            shared, shared_dirs = states, dirs
        table.append((c, states))
    return IdleState(driver, tuple(_cpus_idle(host, table, bound)))


# ------------------------------------------------------------------ cmdline mechanisms
def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def cmdline_limit(src: boot.CmdlineSource, max_cstate: int, driver: str | None
                  ) -> tuple[bool, str]:
    """(holds, explanation) for the C-state parameters of a command line.  ``driver`` is
    the live cpuidle driver, ``None`` offline (then either driver's limit counts, with a
    caveat)."""
    idle = src.get("idle")
    if idle is not None and idle.value in ("poll", "halt"):
        return True, f"idle={idle.value} (no cpuidle driver: only polling or HLT)"
    off = src.get("cpuidle.off")
    if off is not None and off.value not in (None, "0"):
        return True, "cpuidle.off=1 (no cpuidle driver)"
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


def _tuned_latency(host: Host, bound: int, max_cstate: int) -> tuple[bool, str, Evidence] | None:
    st = tuned.load(host)
    o = st.get("cpu", "force_latency")
    if o is None:
        return None
    v = o.value.strip()
    ok = False
    # tuned plugin_cpu: a number (µs), or cstate.id:N|fallback / cstate.name:NAME|fallback
    m = re.fullmatch(r"cstate\.id(?:_no_zero)?:(\d+)(?:\|.*)?", v)
    def num(text: str) -> int:
        return to_int(text, what="force_latency", source=o.file, line=o.line)

    if v.isdigit():
        ok = num(v) <= bound
    elif m:
        ok = num(m.group(1)) <= max_cstate
    else:
        fb = v.split("|")[-1].strip()
        ok = fb.isdigit() and num(fb) <= bound
    return ok, f"tuned force_latency={v} ({st.describe()})", Evidence.file(
        o.file, o.line, f"force_latency={v}")


def _cpupower_idle(host: Host, bound: int) -> tuple[bool, str, Evidence] | None:
    cmds, _ = boot_commands(host)
    found = None
    for c in cmds:
        if c.argv and c.argv[0].endswith("cpupower") and "idle-set" in c.argv:
            for i, w in enumerate(c.argv):
                if w in ("-D", "--disable-by-latency") and i + 1 < len(c.argv):
                    n = _int(c.argv[i + 1])
                    found = (n is not None and n <= bound,
                             f"{c.unit} runs cpupower idle-set -D {c.argv[i + 1]}",
                             Evidence.file(c.file, c.line, c.text))
    return found


# ------------------------------------------------------------------ the check
def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the C-state rule."""
    host, p = ctx.host, ctx.params
    bound, max_cs = int(p["max_latency_us"]), int(p["max_cstate"])
    want = f"no idle state with exit latency > {bound} µs usable"
    evidence: list[Evidence] = []
    runtime_ok: bool | None = None
    runtime_txt = ""
    driver = None
    nothing_to_limit = False
    proc = boot.proc_cmdline(host)
    if host.live:
        state = idle_state(host, bound)
        driver = state.driver if state.driver not in (None, "none") else None
        if not state.cpus:
            held = proc is not None and cmdline_limit(proc, max_cs, None)[0] and \
                (proc.get("idle") is not None or proc.get("cpuidle.off") is not None)
            if not held:
                yield Result(Status.SKIP, "cpuidle",
                             "no cpuidle: no CPU exposes idle states (cpuidle/current_driver "
                             f"is {state.driver or 'absent'}; typical in a VM, where the "
                             "hypervisor manages idle)",
                             evidence=(Evidence.runtime(f"{CPU}/cpuidle/current_driver",
                                                        state.driver or "absent"),))
                return
            runtime_ok, runtime_txt = True, "held: no cpuidle states (" + \
                cmdline_limit(proc, max_cs, None)[1] + " on /proc/cmdline)"
            evidence.append(proc.evidence("idle"))
        else:
            tl = _tuned_latency(host, bound, max_cs)
            tuned_running = tl is not None and tl[0] and host.exists("/run/tuned/tuned.pid")
            usable: dict[tuple[str, ...], list[int]] = {}
            mech: set[str] = set()
            for c in state.cpus:
                left = []
                for _, name, lat, dis in c.states:
                    if lat <= bound:
                        continue
                    if dis:
                        mech.add("disabled in cpuidle/stateN/disable")
                    elif c.qos_us is not None and lat > c.qos_us and c.qos_us <= bound:
                        mech.add(f"PM QoS resume latency {c.qos_us} µs")
                    elif tuned_running:
                        mech.add(tl[1] if tl else "tuned")
                    else:
                        left.append(f"{name} ({lat} µs)")
                if left:
                    usable.setdefault(tuple(left), []).append(c.cpu)
            any_deep = any(lat > bound for c in state.cpus for _, _, lat, _ in c.states)
            if not any_deep and proc is not None:
                held, why = cmdline_limit(proc, max_cs, driver)
                if held:
                    mech.add(f"{why} on /proc/cmdline")
                else:
                    nothing_to_limit = True
            runtime_ok = not usable
            if usable:
                runtime_txt = "missing: " + "; ".join(
                    f"CPUs {sysfs.format_cpulist(cs)} can enter {', '.join(names)}"
                    for names, cs in usable.items()) + f" (driver {state.driver})"
            else:
                runtime_txt = "held" + (f" ({'; '.join(sorted(mech))})" if mech else
                                        f" (no state deeper than {bound} µs)")
            evidence.append(Evidence.runtime(f"{CPU}/cpu*/cpuidle/state*/{{latency,disable}}",
                                             runtime_txt))
            if tuned_running and tl:
                evidence.append(tl[2])
    # ---------------------------------------------------------------- boot
    try:
        cfg = boot.load(host)
        tl = _tuned_latency(host, bound, max_cs)
        cp = _cpupower_idle(host, bound)
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "cpuidle", f"boot configuration cannot be read: {exc}")
        return
    if cfg.problems:
        yield Result(Status.ERROR, "cpuidle", "boot configuration cannot be read: "
                     + "; ".join(cfg.problems), evidence=(*evidence, *cfg.problem_evidence))
        return
    boot_ok: bool | None
    held_by: list[str] = []
    notes: list[str] = []
    if cfg.booted is not None:
        ok_cl, why = cmdline_limit(cfg.booted, max_cs, driver)
        evidence.append(cfg.booted.evidence(next(
            (n for n in CMDLINE_PARAMS if cfg.booted.get(n) is not None), None)))
        if ok_cl:
            held_by.append(f"{why} on {cfg.booted.where()}")
        boot_txt = f"{why} on {cfg.booted.where()}"
        gen = cfg.generator
        if gen is not None and gen is not cfg.booted and \
                [str(gen.get(n)) for n in CMDLINE_PARAMS] != \
                [str(cfg.booted.get(n)) for n in CMDLINE_PARAMS]:
            notes.append(f"{gen.where()} has different C-state parameters "
                         f"({cmdline_limit(gen, max_cs, driver)[1]}): the bootloader config "
                         "was not regenerated")
    else:
        boot_txt = "no bootloader configuration found"
    for extra in (tl, cp):
        if extra is not None:
            evidence.append(extra[2])
            if extra[0]:
                held_by.append(extra[1])
            else:
                notes.append(f"{extra[1]} does not limit to {bound} µs")
    boot_ok = bool(held_by)
    if not held_by and cfg.booted is None and not nothing_to_limit:
        # no command line, nothing else limits: the kernel's default decides
        looked = [boot.not_found()]
        if tl is None:
            looked.append(tuned.load(host).lacks("cpu", "force_latency"))
        if cp is None:
            looked.append("no enabled unit running cpupower idle-set -D")
        evidence.append(Evidence.default(
            "the C-state limit at boot: " + "; ".join(looked),
            "kernel default: every idle state the cpuidle driver registers is usable"))
    if held_by:
        boot_txt = "; ".join(held_by)
    elif nothing_to_limit:
        boot_ok = True
        boot_txt = (f"nothing to limit: driver {driver} offers no state deeper than "
                    f"{bound} µs and no boot parameter removes states")
    if proc is not None and cfg.booted is not None:
        now = [str(proc.get(n)) for n in CMDLINE_PARAMS]
        then = [str(cfg.booted.get(n)) for n in CMDLINE_PARAMS]
        if now != then:
            will = cmdline_limit(cfg.booted, max_cs, driver)[1]
            notes.append(f"drift: /proc/cmdline has {cmdline_limit(proc, max_cs, driver)[1]}"
                         f", the bootloader will pass {will}")
    if host.live and not p.get("persist", True) and runtime_ok:
        boot_ok = True
    status, aspect, msg = verdict(host.live, runtime_ok, boot_ok, boot_set=boot_ok,
                                  what="the C-state limit", runtime_txt=runtime_txt,
                                  boot_txt=boot_txt, want=want)
    if notes:
        msg += ". " + "; ".join(notes)
    rem = None
    if status is Status.FAIL:
        params = [f"intel_idle.max_cstate={max(1, max_cs)}", f"processor.max_cstate={max_cs}"]
        summary, snips = boot.set_params(cfg, params)
        rem = Remediation(
            summary + f" Now: disable deeper states with `cpupower idle-set -D {bound}`.",
            (*snips, Snippet.command(
                f"cpupower idle-set -D {bound} || for f in {CPU}/cpu*/cpuidle/state*; do "
                f"[ \"$(cat $f/latency)\" -gt {bound} ] && echo 1 > $f/disable; done",
                "disable deep idle states now")), **boot.params_step(cfg))
    evidence = list(dict.fromkeys(evidence))
    yield Result(status, "cpuidle", msg, expected=want,
                 actual=runtime_txt if host.live else boot_txt, aspect=aspect,
                 evidence=tuple(evidence), remediation=rem,
                 data={"boot": boot_txt, "loader": cfg.loader})


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
