"""``cpu.governor``, ``cpu.epp`` and ``cpu.boost``: CPU frequency scaling policy.

Live state per cpufreq policy (Documentation/admin-guide/pm/cpufreq.rst): each
``/sys/devices/system/cpu/cpufreq/policyN`` covers the CPUs in ``affected_cpus`` and has
``scaling_driver``, ``scaling_governor`` and, with HWP / amd-pstate-epp,
``energy_performance_preference`` (intel_pstate.rst, amd-pstate.rst).  Turbo: intel_pstate's
``intel_pstate/no_turbo`` (1 = off), the global ``cpufreq/boost`` (acpi-cpufreq, amd-pstate)
and per-policy ``boost`` (amd-pstate, 6.11+).  Each file is read once per run (memoized);
offending CPUs are reported as a compact list (``0-31,64-95``) with the driver.

At boot (in order, later wins): the kernel default (``cpufreq.default_governor=`` on the
command line, else ``CONFIG_CPU_FREQ_DEFAULT_GOV_*`` in ``/boot/config-*``; intel_pstate and
amd-pstate-epp in active mode start in ``powersave`` unless that default is performance),
``cpupower.service`` with ``/etc/sysconfig/cpupower`` (RHEL ``CPUPOWER_START_OPTS``),
``/etc/default/cpupower`` or ``/etc/cpupower-service.conf`` (Arch), other enabled services
running ``cpupower frequency-set -g`` or ``echo X > .../scaling_governor``, and tuned's
``[cpu] governor`` (``a|b``: the first one available) when tuned is enabled.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import field
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
from aiaudit.core.records import record
from aiaudit.core.verdict import verdict
from aiaudit.linux import sysfs
from aiaudit.linux.kernel.config import kernel_config, kernel_config_missing
from aiaudit.linux.sysfs import read_opt
from aiaudit.linux.systemd.bootcmds import boot_commands, oneshot_unit, sysfs_writes

CPU = "/sys/devices/system/cpu"
CPUFREQ = f"{CPU}/cpufreq"
NO_CPUFREQ = ("no cpufreq: /sys/devices/system/cpu/cpufreq has no policy directories, so no "
              "frequency-scaling driver is loaded (typical in a VM, where the hypervisor "
              "controls CPU frequency)")
ACTIVE_EPP_DRIVERS = ("intel_pstate", "amd-pstate-epp")
"""Drivers whose ``performance`` policy forces EPP to performance (intel_pstate.rst,
amd-pstate.c ``amd_pstate_epp_update_limit``)."""
POLICY = re.compile(r"policy\d+")
POLICY_FILES = ("affected_cpus", "scaling_governor", "energy_performance_preference", "boost")
"""Per-policy attributes read (cpufreq.rst; ``boost`` per policy since 6.11)."""
CPUPOWER_CONFIGS = ("/etc/sysconfig/cpupower", "/etc/default/cpupower",
                    "/etc/cpupower-service.conf")


@record
class Policy:
    """One cpufreq policy."""

    name: str
    cpus: tuple[int, ...]
    driver: str
    governor: str | None
    epp: str | None
    boost: str | None


@record
class CpufreqState:
    """Live cpufreq state."""

    online: tuple[int, ...]
    policies: tuple[Policy, ...]
    no_turbo: str | None
    """``intel_pstate/no_turbo`` (``1`` = turbo disabled)."""
    global_boost: str | None
    """``cpufreq/boost`` (``0`` = boost disabled)."""
    pstate_status: str | None
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def drivers(self) -> str:
        """Distinct scaling drivers, comma-separated."""
        return ", ".join(sorted({p.driver for p in self.policies}))



def cpufreq_state(host: Host) -> CpufreqState:
    """Read every policy once (memoized per run)."""
    return host.memo(("cpufreq",), lambda: _cpufreq_state(host))


def _cpufreq_state(host: Host) -> CpufreqState:
    problems: list[str] = []
    online_txt = read_opt(host, f"{CPU}/online")
    try:
        online = tuple(sysfs.parse_cpulist(online_txt or ""))
    except ParseError as exc:
        problems.append(f"{CPU}/online: {exc}")
        online = ()
    policies = []
    # scaling_driver shows the one registered driver (drivers/cpufreq/cpufreq.c
    # show_scaling_driver: cpufreq_driver->name, a global), so it is read from the first
    # policy that has it, not from each of 512
    driver: str | None = None
    # one listing resolves every policyN directory; their files are read in one batch
    names = [n for n in host.listdir(CPUFREQ, resolve_dirs=True) if POLICY.fullmatch(n)]
    raw = iter(map(sysfs.attr, host.read_many(
        [f"{CPUFREQ}/{name}/{f}" for name in names for f in POLICY_FILES])))
    for name in names:
        d = f"{CPUFREQ}/{name}"
        affected, gov, epp, boost = (next(raw) for _ in POLICY_FILES)
        cpus_txt = affected or read_opt(host, f"{d}/related_cpus")
        try:
            cpus = tuple(int(x) for x in (cpus_txt or "").split())
        except ValueError:
            problems.append(f"{d}/affected_cpus: not a CPU list")
            continue
        if not cpus:
            cpus = (int(name[6:]),)
        if driver is None:
            driver = read_opt(host, f"{d}/scaling_driver")
        policies.append(Policy(name, cpus, driver or "unknown", gov, epp, boost))
    status = (read_opt(host, f"{CPU}/intel_pstate/status")
              or read_opt(host, f"{CPU}/amd_pstate/status"))
    return CpufreqState(online, tuple(policies), read_opt(host, f"{CPU}/intel_pstate/no_turbo"),
                        read_opt(host, f"{CPUFREQ}/boost"), status, tuple(problems))


def _group(state: CpufreqState, value_of) -> dict[str, list[int]]:
    """value -> online CPUs (policies' CPUs, restricted to online ones)."""
    online = set(state.online) if state.online else None
    out: dict[str, list[int]] = {}
    for pol in state.policies:
        v = value_of(pol)
        if v is None:
            continue
        cpus = [c for c in pol.cpus if online is None or c in online]
        out.setdefault(v, []).extend(cpus)
    return out


def _describe(groups: dict[str, list[int]]) -> str:
    return "; ".join(f"{v} on CPUs {sysfs.format_cpulist(c)}"
                     for v, c in sorted(groups.items(), key=lambda kv: min(kv[1] or [0])))


# ------------------------------------------------------------------ boot sources
@record
class BootSetting:
    """A value some boot mechanism sets, with where."""

    value: str
    source: str
    evidence: Evidence


def default_governor(host: Host) -> BootSetting | None:
    """The kernel's default governor at boot (command line, then kernel config)."""
    # the boot configuration and tuned only where cpufreq is (not in most VMs)
    from aiaudit.linux.boot import cmdline as boot

    cfg = boot.load(host)
    if cfg.booted is not None:
        p = cfg.booted.get("cpufreq.default_governor")
        if p is not None and p.value:
            return BootSetting(p.value, f"cpufreq.default_governor on {cfg.booted.where()}",
                               cfg.booted.evidence("cpufreq.default_governor"))
    kc = kernel_config(host)
    if kc is None:
        return None
    path, text = kc
    for n, line in enumerate(text.splitlines(), 1):
        m = re.fullmatch(r"CONFIG_CPU_FREQ_DEFAULT_GOV_([A-Z]+)=y", line.strip())
        if m:
            gov = m.group(1).lower()
            return BootSetting(gov, f"kernel default ({path.lstrip('/')}:{n})",
                               Evidence.file(path, n, line.strip()))
    return None


def _cpupower_opts_governor(opts: str) -> str | None:
    try:
        words = shlex.split(opts)
    except ValueError:
        words = opts.split()
    if "frequency-set" not in words:
        return None
    for i, w in enumerate(words):
        if w in ("-g", "--governor") and i + 1 < len(words):
            return words[i + 1]
        if w.startswith("--governor="):
            return w.split("=", 1)[1]
    return None


def cpupower_service(host: Host, key: str) -> list[BootSetting]:
    """What ``cpupower.service`` (when enabled) sets for ``key`` (``governor``)."""
    from aiaudit.linux.systemd import units as systemd

    out: list[BootSetting] = []
    if not systemd.is_enabled(host, "cpupower.service").enabled:
        return out
    for path in CPUPOWER_CONFIGS:
        try:
            text = host.try_read_text(path)
        except HostError:
            continue
        if text is None:
            continue
        from aiaudit.linux.boot import loaders as bc  # see default_governor

        assigns, _, _ = bc.parse_shell_assignments(text)
        for a in assigns:
            val = None
            if a.name == "CPUPOWER_START_OPTS" and key == "governor":
                val = _cpupower_opts_governor(a.value)
            elif a.name.lower() == key and a.value:
                val = a.value
            if val:
                out.append(BootSetting(val, f"cpupower.service ({path.lstrip('/')}:{a.line})",
                                       Evidence.file(path, a.line, a.raw.strip())))
    return out


def unit_settings(host: Host, sysfs_name: str, cpupower_flag: tuple[str, ...] = ()
                  ) -> list[BootSetting]:
    """Enabled services (other than cpupower.service) that write ``sysfs_name`` or run
    ``cpupower frequency-set <flag> VALUE``."""
    out: list[BootSetting] = []
    for value, _path, c in sysfs_writes(host, re.escape(sysfs_name) + r"$"):
        out.append(BootSetting(value, f"{c.unit} ({c.file.lstrip('/')}:{c.line})",
                               Evidence.file(c.file, c.line, c.text)))
    if cpupower_flag:
        cmds, _ = boot_commands(host)
        for c in cmds:
            if c.unit == "cpupower.service" or not c.argv or \
                    not c.argv[0].endswith("cpupower") or "frequency-set" not in c.argv:
                continue
            for i, w in enumerate(c.argv):
                val = None
                if w in cpupower_flag and i + 1 < len(c.argv):
                    val = c.argv[i + 1]
                elif any(w.startswith(f + "=") for f in cpupower_flag if f.startswith("--")):
                    val = w.split("=", 1)[1]
                if val:
                    out.append(BootSetting(val, f"{c.unit} ({c.file.lstrip('/')}:{c.line})",
                                           Evidence.file(c.file, c.line, c.text)))
    return out


def tuned_setting(host: Host, key: str) -> BootSetting | None:
    """tuned ``[cpu] key`` of the active profile (when tuned is enabled)."""
    from aiaudit.linux.tuned import profiles as tuned  # see default_governor

    st = tuned.load(host)
    o = st.get("cpu", key)
    if o is None:
        return None
    return BootSetting(o.value.split("|")[0].strip(),
                       f"{st.describe()} [cpu] {key} ({o.file.lstrip('/')}:{o.line})",
                       Evidence.file(o.file, o.line, f"{key}={o.value}"))


# ------------------------------------------------------------------ checks
_STR_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}
GOV_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "governors": {**_STR_LIST, "default": ["performance"],
                      "description": "allowed scaling governors"},
        "persist": {"type": "boolean", "default": True},
    },
}
EPP_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "values": {**_STR_LIST, "default": ["performance"],
                   "description": "allowed energy_performance_preference values"},
        "persist": {"type": "boolean", "default": True},
    },
}
BOOST_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {"persist": {"type": "boolean", "default": True}},
}

GOV_UNIT = "/etc/systemd/system/aiaudit-cpu-governor.service"
EPP_UNIT = "/etc/systemd/system/aiaudit-cpu-epp.service"
BOOST_UNIT = "/etc/systemd/system/aiaudit-cpu-boost.service"


def _boot_chain(host: Host, default: BootSetting | None, *sources: list[BootSetting]
                ) -> tuple[BootSetting | None, list[Evidence], bool]:
    """(winning setting, evidence of all, explicit) applying sources in order."""
    win = default
    ev: list[Evidence] = [default.evidence] if default else []
    explicit = False
    for group in sources:
        for s in group:
            win, explicit = s, True
            ev.append(s.evidence)
    return win, ev, explicit


def boot_governor(host: Host) -> tuple[BootSetting | None, list[Evidence], bool]:
    """The governor at the next boot: (winning setting, evidence, set by configuration)."""
    tg = tuned_setting(host, "governor")
    return _boot_chain(host, default_governor(host), cpupower_service(host, "governor"),
                       unit_settings(host, "scaling_governor", ("-g", "--governor")),
                       [tg] if tg else [])


def _kernel_default_unknown(host: Host) -> str:
    """Why :func:`default_governor` found no kernel default (display form)."""
    kc = kernel_config(host)
    if kc is None:
        return f"kernel default unknown: {kernel_config_missing(host)}"
    return (f"kernel default unknown: {kc[0].lstrip('/')} has no "
            "CONFIG_CPU_FREQ_DEFAULT_GOV_*=y")


def governor_searched(host: Host) -> str:
    """What :func:`boot_governor` looked for, in its order and display form, for the
    ``default`` evidence when nothing sets the governor: the command line the bootloader
    will pass, cpupower.service's configuration, enabled units, tuned."""
    from aiaudit.linux.boot import cmdline as boot
    from aiaudit.linux.systemd import units as systemd
    from aiaudit.linux.tuned import profiles as tuned  # see default_governor

    cfg = boot.load(host)
    cmdline = (f"no cpufreq.default_governor= on {cfg.booted.where()}" if cfg.booted else
               f"no cpufreq.default_governor= ({boot.not_found()})")
    cpupower = systemd.is_enabled(host, "cpupower.service")
    cpw = (f"no governor in {' or '.join(p.lstrip('/') for p in CPUPOWER_CONFIGS)} "
           "(cpupower.service)" if cpupower.enabled else "cpupower.service not enabled")
    return "scaling governor at boot: " + "; ".join((
        cmdline, cpw, "no enabled unit writing scaling_governor or running cpupower "
        "frequency-set -g", tuned.load(host).lacks("cpu", "governor")))


def _result(ctx: CheckContext, subject: str, what: str, state: CpufreqState | None,
            bad: dict[str, list[int]] | None, runtime_txt: str, win: BootSetting | None,
            ev: list[Evidence], explicit: bool, boot_ok: bool | None, want: str,
            rem: Remediation) -> Result:
    host = ctx.host
    rt_ok = None if bad is None else not bad
    if host.live and not ctx.params.get("persist", True) and rt_ok:
        boot_ok = True
    boot_txt = f"{win.value} ({win.source})" if win else "not set (kernel default unknown)"
    status, aspect, msg = verdict(host.live, rt_ok, boot_ok, boot_set=explicit, what=what,
                                  runtime_txt=runtime_txt, boot_txt=boot_txt, want=want)
    data: dict[str, Any] = {"boot": win.value if win else None}
    if state is not None:
        data["drivers"] = state.drivers
        if bad:
            data["offending_cpus"] = sysfs.format_cpulist(c for v in bad.values() for c in v)
    return Result(status, subject, msg, expected=want, actual=runtime_txt if host.live else
                  (win.value if win else None), aspect=aspect, evidence=tuple(ev),
                  remediation=rem if status is Status.FAIL else None, data=data)


def _live_state(ctx: CheckContext) -> tuple[CpufreqState | None, Result | None]:
    host = ctx.host
    if not host.live:
        return None, None
    state = cpufreq_state(host)
    if not state.policies:
        return None, Result(Status.SKIP, "cpufreq", NO_CPUFREQ,
                            evidence=(Evidence.runtime(CPUFREQ, "no policy*"),))
    return state, None


def run_governor(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the governor rule."""
    host = ctx.host
    allowed = list(ctx.params["governors"])
    want = "one of " + ", ".join(allowed)
    state, skip = _live_state(ctx)
    if skip:
        yield skip
        return
    try:
        win, ev, explicit = boot_governor(host)
        if win is None:  # nothing sets it, no kernel default known: what was looked for
            ev.append(Evidence.default(governor_searched(host), _kernel_default_unknown(host)))
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "cpufreq", f"boot-time governor cannot be determined: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    if win is not None and not explicit and state is not None and \
            all(p.driver in ACTIVE_EPP_DRIVERS for p in state.policies) and \
            win.value != "performance":
        win = BootSetting("powersave", f"{state.drivers} active mode default ({win.source} "
                          "is not performance)", win.evidence)
    boot_ok = None if win is None else win.value in allowed
    bad = runtime_txt = None
    if state is not None:
        groups = _group(state, lambda p: p.governor or "unknown")
        bad = {g: c for g, c in groups.items() if g not in allowed}
        runtime_txt = f"{_describe(groups)} ({state.drivers})"
        ev = [Evidence.runtime(f"{CPUFREQ}/policy*/scaling_governor", _describe(groups)), *ev]
    gov = allowed[0]
    summary = f"Set the {gov} governor now and at boot with a oneshot unit ({GOV_UNIT})."
    from aiaudit.linux.tuned import profiles as tuned  # see default_governor

    st = tuned.load(host)
    tg = tuned_setting(host, "governor")
    manual = []
    if tg is not None and tg.value not in allowed:
        manual.append(f"{st.describe()} sets [cpu] governor={tg.value} after boot: change it")
    for other in [*cpupower_service(host, "governor"),
                  *unit_settings(host, "scaling_governor", ("-g", "--governor"))]:
        if other.value not in allowed:
            manual.append(f"{other.source} sets {other.value}: change it")
    rem = Remediation(summary, (
        Snippet.file(GOV_UNIT, oneshot_unit(f"CPU frequency governor {gov}",
                                     f"echo {gov} | tee {CPUFREQ}/policy*/scaling_governor"
                                     " >/dev/null")),
        Snippet.enable(GOV_UNIT.rsplit("/", 1)[1], "run it at boot"),
        Snippet.command(f"cpupower frequency-set -g {gov} || echo {gov} | tee "
                        f"{CPUFREQ}/policy*/scaling_governor", "apply now"),
    ), manual="; ".join(manual))
    yield _result(ctx, "cpufreq", "scaling governor", state, bad, str(runtime_txt), win, ev,
                  explicit, boot_ok, want, rem)


def run_epp(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the energy-performance-preference rule."""
    host = ctx.host
    allowed = list(ctx.params["values"])
    want = "one of " + ", ".join(allowed)
    state, skip = _live_state(ctx)
    if skip:
        yield skip
        return
    if state is not None and all(p.epp is None for p in state.policies):
        yield Result(Status.SKIP, "cpufreq",
                     f"scaling driver {state.drivers} has no energy_performance_preference "
                     "(only intel_pstate with HWP and amd-pstate-epp have one)",
                     evidence=(Evidence.runtime(f"{CPUFREQ}/policy*/"
                                                "energy_performance_preference", "absent"),))
        return
    try:
        sources = [unit_settings(host, "energy_performance_preference"),
                   [t] if (t := tuned_setting(host, "energy_performance_preference")) else []]
        win, ev, explicit = _boot_chain(host, None, *sources)
        if win is None:
            gwin, gev, _ = boot_governor(host)
            if gwin is not None and gwin.value == "performance":
                win = BootSetting("performance", f"forced by the performance governor "
                                  f"({gwin.source}) with intel_pstate/amd-pstate-epp",
                                  gwin.evidence)
                ev, explicit = gev, True
            else:  # the driver's (firmware's) default applies: say what was looked for
                from aiaudit.linux.tuned import profiles as tuned  # see default_governor

                gov = (f"the boot governor is {gwin.value} ({gwin.source}), not performance"
                       if gwin is not None else "the boot governor is unknown")
                ev = [Evidence.default(
                    "energy performance preference at boot: no enabled unit writing "
                    "energy_performance_preference; " + tuned.load(host).lacks(
                        "cpu", "energy_performance_preference") + "; " + gov,
                    "driver default (the firmware's HWP/CPPC preference): unknown offline"
                    if not host.live else "driver default (the firmware's HWP/CPPC "
                    "preference)"), *gev]
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "cpufreq", f"boot-time EPP cannot be determined: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    boot_ok = None if win is None else win.value in allowed
    bad = runtime_txt = None
    if state is not None:
        groups = _group(state, lambda p: p.epp)
        bad = {g: c for g, c in groups.items() if g not in allowed}
        runtime_txt = f"{_describe(groups)} ({state.drivers})"
        ev = [Evidence.runtime(f"{CPUFREQ}/policy*/energy_performance_preference",
                               _describe(groups)), *ev]
    val = allowed[0]
    rem = Remediation(f"Set energy_performance_preference to {val} now and at boot "
                      f"({EPP_UNIT}); the performance governor also forces it.", (
                          Snippet.file(EPP_UNIT, oneshot_unit(
                              f"CPU energy performance preference {val}",
                              f"echo {val} | tee "
                              f"{CPUFREQ}/policy*/energy_performance_preference >/dev/null")),
                          Snippet.enable(EPP_UNIT.rsplit("/", 1)[1], "run it at boot"),
                          Snippet.command(f"echo {val} | tee {CPUFREQ}/policy*/"
                                          "energy_performance_preference", "apply now")))
    yield _result(ctx, "cpufreq", "energy performance preference", state, bad,
                  str(runtime_txt), win, ev, explicit, boot_ok, want, rem)


def run_boost(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the turbo/boost rule."""
    host = ctx.host
    want = "turbo/boost enabled"
    state, skip = _live_state(ctx)
    if skip:
        yield skip
        return
    bad: dict[str, list[int]] | None = None
    runtime_txt = ""
    ev: list[Evidence] = []
    if state is not None:
        bad = {}
        all_cpus = [c for p in state.policies for c in p.cpus]
        if state.no_turbo is not None:
            ev.append(Evidence.runtime(f"{CPU}/intel_pstate/no_turbo", state.no_turbo))
            if state.no_turbo == "1":
                bad["intel_pstate/no_turbo=1"] = all_cpus
        if state.global_boost is not None:
            ev.append(Evidence.runtime(f"{CPUFREQ}/boost", state.global_boost))
            if state.global_boost == "0":
                bad["cpufreq/boost=0"] = all_cpus
        per = _group(state, lambda p: p.boost)
        if per:
            ev.append(Evidence.runtime(f"{CPUFREQ}/policy*/boost", _describe(per)))
            if "0" in per:
                bad["policy boost=0"] = per["0"]
        if state.no_turbo is None and state.global_boost is None and not per:
            yield Result(Status.SKIP, "cpufreq",
                         f"scaling driver {state.drivers} exposes no turbo/boost control",
                         evidence=(Evidence.runtime(f"{CPUFREQ}/boost", "absent"),))
            return
        runtime_txt = ("disabled: " + _describe(bad)) if bad else "enabled"
    try:
        off = [s for s in unit_settings(host, "intel_pstate/no_turbo") if s.value == "1"]
        off += [s for s in unit_settings(host, "cpufreq/boost") if s.value == "0"]
        t = tuned_setting(host, "no_turbo")
        if t is not None and t.value.lower() in ("1", "true", "yes"):
            off.append(t)
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "cpufreq", f"boot-time turbo setting cannot be determined: "
                     f"{exc}")
        return
    if off:
        win = BootSetting("disabled", off[-1].source, off[-1].evidence)
        ev += [s.evidence for s in off]
    else:
        win = BootSetting("enabled", "kernel default: boost allowed",
                          Evidence.default("turbo/boost at boot", "enabled"))
        ev.append(win.evidence)
    rem = Remediation(
        f"Allow turbo/boost now, and at boot with {BOOST_UNIT}.", (
            Snippet.file(BOOST_UNIT, oneshot_unit(
                "Allow CPU turbo/boost",
                f"[ -e {CPU}/intel_pstate/no_turbo ] && echo 0 > {CPU}/intel_pstate/no_turbo; "
                f"[ -e {CPUFREQ}/boost ] && echo 1 > {CPUFREQ}/boost; true")),
            Snippet.enable(BOOST_UNIT.rsplit("/", 1)[1], "run at boot"),
            Snippet.command(f"echo 0 > {CPU}/intel_pstate/no_turbo 2>/dev/null; "
                            f"echo 1 > {CPUFREQ}/boost 2>/dev/null; true", "apply now")),
        manual=(f"remove what disables it at boot: {', '.join(s.source for s in off)}"
                if off else ""))
    yield _result(ctx, "cpufreq", "turbo/boost", state, bad, runtime_txt, win, ev, bool(off),
                  not off, want, rem)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the cpufreq checks."""
    return [
        CheckSpec(id="cpu.governor", title="CPUs use the expected frequency governor",
                  run=run_governor, params_schema=GOV_SCHEMA,
                  description=(
                      "Live: scaling_governor of every cpufreq policy (offending CPUs listed "
                      "compactly with the driver; skipped without cpufreq). Boot: kernel "
                      "default (cpufreq.default_governor=, CONFIG_CPU_FREQ_DEFAULT_GOV_*), "
                      "cpupower.service config, enabled units running cpupower frequency-set "
                      "or writing scaling_governor, tuned [cpu] governor.")),
        CheckSpec(id="cpu.epp", title="CPUs prefer performance over energy saving (EPP)",
                  run=run_epp, params_schema=EPP_SCHEMA,
                  description=(
                      "Live: energy_performance_preference of every policy (skipped where "
                      "the driver has none). Boot: units writing it, tuned [cpu] "
                      "energy_performance_preference, or forced by the performance governor.")),
        CheckSpec(id="cpu.boost", title="CPU turbo/boost is not disabled",
                  run=run_boost, params_schema=BOOST_SCHEMA,
                  description=(
                      "Live: intel_pstate/no_turbo, cpufreq/boost and per-policy boost. Boot: "
                      "units writing them, tuned [cpu] no_turbo; the kernel default allows "
                      "boost.")),
    ]
