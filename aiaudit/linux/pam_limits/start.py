"""The limits a process has before pam_limits runs: PID 1's, and those systemd starts a
daemon with.

* PID 1's limits (Debian's pam_limits before 1.7 and ``set_all`` start from them):
  ``/proc/1/limits`` live; offline what systemd as PID 1 gives itself
  (``src/core/main.c``: ``bump_file_max_and_nr_open()`` sets fs.nr_open to 1073741816 and
  ``bump_rlimit_nofile()`` takes nofile to it; ``bump_rlimit_memlock()`` raises memlock to
  64 MiB; UNCONFIRMED for every version), else the kernel's boot values (``INR_OPEN_CUR``
  1024 / ``INR_OPEN_MAX`` 4096; ``MLOCK_LIMIT`` 64 KiB before 5.16).
* A daemon's limits (what a limit pam_limits leaves alone keeps): the running process's
  ``/proc/<pid>/limits`` live, else its unit's ``Limit*=`` (unit file and drop-ins), the
  manager's ``DefaultLimit*=`` (systemd-system.conf(5)), systemd's built-in defaults.
"""

from __future__ import annotations

from dataclasses import field, replace

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.procs import proc_of
from aiaudit.linux.systemd import units as systemd
from aiaudit.linux.systemd.unitfile import Assignment

SYSTEMD_NR_OPEN = 1073741816
PID1_SYSTEMD = {"nofile": (SYSTEMD_NR_OPEN, SYSTEMD_NR_OPEN),
                "memlock": (64 * 1024**2, 64 * 1024**2)}
PID1_KERNEL = {"nofile": (1024, 4096), "memlock": (65536, 65536)}
SYSTEMD_DEFAULTS = {"nofile": (1024, 524288), "memlock": (8 * 1024**2, 8 * 1024**2)}
"""systemd's built-in defaults for services (systemd-system.conf(5)): DefaultLimitNOFILE
1024:524288 (v240+), DefaultLimitMEMLOCK 8M (v253+, earlier the kernel's 64 KiB)."""
KERNEL_NR_OPEN = 1048576
"""The kernel's default ``fs.nr_open``."""
FD_SETSIZE = 1024
ITEM_KEYS = {"nofile": "NOFILE", "memlock": "MEMLOCK"}
"""The items the session model follows, with their systemd ``Limit*=`` names."""
SERVICE_UNITS = {"sshd": ("ssh.service", "sshd.service")}
SERVICE_COMM = {"sshd": "sshd"}
CALLER_SERVICES = frozenset({"su", "su-l", "sudo", "sudo-i", "runuser", "runuser-l"})
"""Services run by a user's own shell: a session keeps that caller's limits."""
SYSTEMD_BINARIES = ("/lib/systemd/systemd", "/usr/lib/systemd/systemd")


@record
class Start:
    """Limits a process has before pam_limits runs, and where they come from."""

    values: dict[str, tuple[int, int]]
    evidence: tuple[Evidence, ...]
    what: str
    overridden: dict[str, tuple[tuple[Assignment, str], ...]] = field(default_factory=dict)
    """Per item, the ``Limit*=``/``DefaultLimit*=`` assignments that lost, with why
    (:mod:`aiaudit.linux.systemd.shadowed`)."""
    unit: str | None = None
    """The unit whose settings decide (``None``: not a unit's)."""
    dropins: tuple[str, ...] = ()
    """That unit's drop-in files, in the order systemd reads them."""


def has_systemd(host: Host) -> bool:
    """The root ships systemd (then PID 1 is assumed to be systemd offline)."""
    return any(host.exists(p) for p in SYSTEMD_BINARIES)


def proc_limits(host: Host, pid: str, what: str) -> Start | None:
    """``/proc/<pid>/limits`` as a :class:`Start` (live only), or ``None`` when it cannot
    be read or lacks an item of :data:`ITEM_KEYS`."""
    if not host.live:
        return None
    path = f"/proc/{pid}/limits"
    try:
        vals = lp.parse_proc_limits(host.read_text(path))
    except (HostError, ParseError):
        return None
    if not all(i in vals for i in ITEM_KEYS):
        return None
    return Start(vals, (Evidence.runtime(path),), what)


def pid1_limits(host: Host) -> Start:
    """PID 1's limits: /proc/1/limits live, the documented fallback offline."""
    live = proc_limits(host, "1", "PID 1's limits")
    if live is not None:
        return live
    if has_systemd(host):
        return Start(dict(PID1_SYSTEMD), (Evidence.default(
            "PID 1's limits (offline: systemd raises its own to nofile 1073741816, memlock "
            "64 MiB)"),), "PID 1's limits (offline: systemd's own)")
    return Start(dict(PID1_KERNEL), (Evidence.default(
        "PID 1's limits (offline, no systemd: kernel boot values nofile 1024:4096, memlock "
        "64 KiB)"),), "PID 1's limits (offline: kernel defaults)")


def kernel_nr_open(host: Host) -> int:
    """``fs.nr_open``: live from /proc; offline what systemd as PID 1 sets it to, else the
    kernel default 1048576."""
    if host.live:
        try:
            return int(host.read_text("/proc/sys/fs/nr_open").strip())
        except (HostError, ValueError):
            pass
    return SYSTEMD_NR_OPEN if has_systemd(host) else KERNEL_NR_OPEN


def unit_limits(host: Host, units: tuple[str, ...]) -> Start:
    """Limits systemd starts the first existing unit of ``units`` with: its ``Limit*=``
    (unit file + drop-ins), else the manager's ``DefaultLimit*=``, else systemd's
    built-in defaults."""
    from aiaudit.linux.systemd.unitfile import last

    unit = _first_unit(host, units)
    try:
        mgr = systemd.manager_config(host)
    except (HostError, ParseError):
        mgr = []
    vals: dict[str, tuple[int, int]] = {}
    ev: list[Evidence] = []
    lost: dict[str, tuple[tuple[Assignment, str], ...]] = {}
    for item, key in ITEM_KEYS.items():
        a = unit.get("Service", f"Limit{key}") if unit else None
        lost[item] = _lost(unit, mgr, key, a)
        if a is None or not a.value:
            a = last(mgr, "Manager", f"DefaultLimit{key}")
        if a is not None and a.value:
            try:
                vals[item] = lp.parse_systemd_limit(a.value, item)
                ev.append(Evidence.file(a.file, a.line, f"{a.key}={a.value}"))
                continue
            except ParseError:
                pass
        vals[item] = SYSTEMD_DEFAULTS[item]
        ev.append(Evidence.default(f"systemd default DefaultLimit{key}",
                                   ":".join(lp.fmt(v) for v in SYSTEMD_DEFAULTS[item])))
    what = f"{unit.name}'s limits" if unit else "systemd's default service limits"
    return Start(vals, tuple(ev), what, lost, unit.name if unit else None,
                 unit.dropins if unit else ())


def _lost(unit: systemd.Unit | None, mgr: list[Assignment], key: str,
          own: Assignment | None) -> tuple[tuple[Assignment, str], ...]:
    """The ``Limit{key}=`` assignments of the unit that lost to a later one, and the
    manager's ``DefaultLimit{key}=`` ones (all of them when the unit sets its own)."""
    dflt = [a for a in mgr if a.section == "Manager" and a.key == f"DefaultLimit{key}"]
    mine = [a for a in unit.assignments if a.key == f"Limit{key}"] if unit else []
    if len(mine) < 2 and not dflt:  # nothing lost (the usual case: no import)
        return ()
    from aiaudit.linux.systemd.shadowed import overridden

    out = overridden(unit.assignments, "Service", f"Limit{key}") if unit else []
    if own is not None and own.value:
        where = f"{own.file.lstrip('/')}:{own.line}"
        out += [(a, f"{unit.name if unit else 'the unit'} sets its own Limit{key}= at "
                    f"{where}: DefaultLimit{key}= applies only to units that set none")
                for a in dflt]
    else:
        out += overridden(mgr, "Manager", f"DefaultLimit{key}")
    return tuple(out)


def _first_unit(host: Host, units: tuple[str, ...]) -> systemd.Unit | None:
    for name in units:
        try:
            u = systemd.load_unit(host, name)
        except (HostError, ParseError):
            continue
        if u.exists:
            return u
    return None


def daemon_limits(host: Host, comm: str, units: tuple[str, ...], running: str) -> Start:
    """A daemon's limits: the running process named ``comm`` live (described as
    ``running``), else what systemd starts the first existing of ``units`` with."""
    pid = proc_of(host, comm) if host.live else None
    live = proc_limits(host, pid, running) if pid else None
    return live if live is not None else unit_limits(host, units)


def service_limits(host: Host, service: str) -> Start:
    """Limits of the process that opens the session (what a limit left alone keeps)."""
    comm = SERVICE_COMM.get(service)
    units = SERVICE_UNITS.get(service, ())
    if comm:
        return daemon_limits(host, comm, units, f"the running {comm}'s limits")
    # not a daemon with a unit: the session process inherits from whoever started it
    who = (f"the caller's limits (the shell that ran {service})"
           if service in CALLER_SERVICES
           else f"the limits of the process that runs {service} (the login service)")
    return replace(unit_limits(host, units), what=f"{who}, estimated here as systemd's "
                   "default service limits")
