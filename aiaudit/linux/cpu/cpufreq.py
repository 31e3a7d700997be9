"""Live cpufreq state: one record per policy, read once per run.

Documentation/admin-guide/pm/cpufreq.rst: each ``/sys/devices/system/cpu/cpufreq/policyN``
covers the CPUs in ``affected_cpus`` and has ``scaling_driver``, ``scaling_governor`` and,
with HWP / amd-pstate-epp, ``energy_performance_preference`` (intel_pstate.rst,
amd-pstate.rst).  Turbo: intel_pstate's ``intel_pstate/no_turbo`` (1 = off), the global
``cpufreq/boost`` (acpi-cpufreq, amd-pstate) and per-policy ``boost`` (amd-pstate, 6.11+).
"""

from __future__ import annotations

from dataclasses import field
from typing import Callable

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence, Result, Status
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record
from aiaudit.linux import sysfs
from aiaudit.linux.sysfs import read_opt

CPU = "/sys/devices/system/cpu"
CPUFREQ = f"{CPU}/cpufreq"
NO_CPUFREQ = ("no cpufreq: /sys/devices/system/cpu/cpufreq has no policy directories, so no "
              "frequency-scaling driver is loaded (typical in a VM, where the hypervisor "
              "controls CPU frequency)")
ACTIVE_EPP_DRIVERS = ("intel_pstate", "amd-pstate-epp")
"""Drivers whose ``performance`` policy forces EPP to performance (intel_pstate.rst,
amd-pstate.c ``amd_pstate_epp_update_limit``)."""
POLICY = lazy_pattern(r"policy\d+")
POLICY_FILES = ("affected_cpus", "scaling_governor", "energy_performance_preference", "boost")
"""Per-policy attributes read (cpufreq.rst; ``boost`` per policy since 6.11)."""


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
    names = [n for n in host.listdir(CPUFREQ, resolve_dirs=True) if POLICY().fullmatch(n)]
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


def live_state(host: Host) -> tuple[CpufreqState | None, Result | None]:
    """(live state, ``None``) on a live host with cpufreq; (``None``, a skip result) on one
    without (no ``policyN``); (``None``, ``None``) offline."""
    if not host.live:
        return None, None
    state = cpufreq_state(host)
    if not state.policies:
        return None, Result(Status.SKIP, "cpufreq", NO_CPUFREQ,
                            evidence=(Evidence.runtime(CPUFREQ, "no policy*"),))
    return state, None


def group(state: CpufreqState, value_of: Callable[[Policy], str | None]
          ) -> dict[str, list[int]]:
    """value -> online CPUs (policies' CPUs, restricted to online ones); policies whose
    value is ``None`` are left out."""
    online = set(state.online) if state.online else None
    out: dict[str, list[int]] = {}
    for pol in state.policies:
        v = value_of(pol)
        if v is None:
            continue
        cpus = [c for c in pol.cpus if online is None or c in online]
        out.setdefault(v, []).extend(cpus)
    return out


def describe(groups: dict[str, list[int]]) -> str:
    """``powersave on CPUs 0-31,64-95; performance on CPUs 32-63,96-127``."""
    return "; ".join(f"{v} on CPUs {sysfs.format_cpulist(c)}"
                     for v, c in sorted(groups.items(), key=lambda kv: min(kv[1] or [0])))


@record
class Boost:
    """What disables turbo/boost now."""

    off: dict[str, list[int]]
    """Mechanism (``intel_pstate/no_turbo=1``) -> the CPUs it holds back (empty: on)."""
    evidence: tuple[Evidence, ...]


def boost_state(state: CpufreqState) -> Boost | None:
    """Which boost controls exist and which of them disable it (``None``: the driver
    exposes none)."""
    off: dict[str, list[int]] = {}
    ev: list[Evidence] = []
    all_cpus = [c for p in state.policies for c in p.cpus]
    if state.no_turbo is not None:
        ev.append(Evidence.runtime(f"{CPU}/intel_pstate/no_turbo", state.no_turbo))
        if state.no_turbo == "1":
            off["intel_pstate/no_turbo=1"] = all_cpus
    if state.global_boost is not None:
        ev.append(Evidence.runtime(f"{CPUFREQ}/boost", state.global_boost))
        if state.global_boost == "0":
            off["cpufreq/boost=0"] = all_cpus
    per = group(state, lambda p: p.boost)
    if per:
        ev.append(Evidence.runtime(f"{CPUFREQ}/policy*/boost", describe(per)))
        if "0" in per:
            off["policy boost=0"] = per["0"]
    if state.no_turbo is None and state.global_boost is None and not per:
        return None
    return Boost(off, tuple(ev))
