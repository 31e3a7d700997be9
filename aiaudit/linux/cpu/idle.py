"""Live cpuidle state: the idle states of every online CPU, with what is disabled.

Documentation/admin-guide/pm/cpuidle.rst: ``cpuN/cpuidle/stateK`` has ``name``, ``latency``
(exit latency, µs) and ``disable``; ``cpuN/power/pm_qos_resume_latency_us`` limits which
states the governor picks (``0`` = no constraint, ``n/a`` = 0 µs, drivers/base/power/
sysfs.c).  ``cpuidle/current_driver`` names the driver (``none`` without one).
"""

from __future__ import annotations

import re

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.parsing import to_int
from aiaudit.core.startup.records import record
from aiaudit.linux import sysfs
from aiaudit.linux.sysfs import read_opt

CPU = "/sys/devices/system/cpu"

StateRow = tuple[str, str, int]
"""(state directory, name, exit latency µs) of one idle state."""


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

    @property
    def active_driver(self) -> str | None:
        """The cpuidle driver, ``None`` when there is none (absent or ``none``)."""
        return self.driver if self.driver not in (None, "none") else None


def idle_state(host: Host, bound: int) -> IdleState:
    """Read cpuidle once per run and bound (memoized)."""
    return host.memo(("cpuidle", bound), lambda: _idle_state(host, bound))


def _driver_states(host: Host, base: str, listing: list[str]) -> list[StateRow]:
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


def _cpus_idle(host: Host, table: list[tuple[int, list[StateRow]]], bound: int
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


def _online(host: Host) -> list[int]:
    """Online CPUs (``cpu/online``), else every ``cpuN`` directory."""
    try:
        online = sysfs.parse_cpulist(read_opt(host, f"{CPU}/online") or "")
    except ParseError:
        online = []
    # one listing resolves every cpuN directory (one lstat each otherwise)
    cpu_dirs = host.listdir(CPU, resolve_dirs=True)
    return online or sorted(int(n[3:]) for n in cpu_dirs if re.fullmatch(r"cpu\d+", n))


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
    online = _online(host)
    table: list[tuple[int, list[StateRow]]] = []
    shared: list[StateRow] | None = None
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
