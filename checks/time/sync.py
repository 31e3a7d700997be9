"""``time.sync``: a time synchronisation daemon keeps the clock right.

What it checks: distributed training (NCCL/Gloo timeouts, checkpoints named by time),
Kerberos and the logs a SIEM correlates all assume synchronised clocks.

How it decides: at boot, one of chrony (``chrony.service`` on Debian, ``chronyd.service``
on RHEL), ``systemd-timesyncd.service``, ntpd (``ntp.service``, ``ntpd.service``,
``ntpsec.service``) or ``openntpd.service`` is installed and enabled (wants links,
:mod:`aiaudit.linux.systemd.units`).  Live, one of their processes also runs
(``/proc/<pid>/comm``, which the kernel truncates to 15 bytes: ``systemd-timesyn``); a
daemon running without an enabled unit is drift (it stops at the next reboot).  A root
without an init (a container image) uses its host's clock: skipped.

Sources: systemd.unit(5) (wants links); proc(5) (``/proc/<pid>/comm``); chronyd(8),
systemd-timesyncd.service(8).
"""

from __future__ import annotations

from typing import Iterator

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
from aiaudit.core.startup.records import record
from aiaudit.linux.rootkind import NOT_BOOTED, boots

UNITS = ("chrony.service", "chronyd.service", "systemd-timesyncd.service", "ntp.service",
         "ntpd.service", "ntpsec.service", "openntpd.service")
COMMS = ("chronyd", "systemd-timesyn", "ntpd", "openntpd")
UNITS_OF = {"chronyd": ("chrony.service", "chronyd.service"),
            "systemd-timesyn": ("systemd-timesyncd.service",),
            "ntpd": ("ntp.service", "ntpd.service", "ntpsec.service"),
            "openntpd": ("openntpd.service",)}
"""The units of :data:`UNITS` that start each daemon of :data:`COMMS`."""
MAX_PIDS = 65536
SUBJECT = "time sync"

def install_fix(host: Host) -> Remediation:
    """Install chrony (the usual choice for servers) with the root's package manager, and
    start it now and at every boot (its unit is ``chronyd`` on RHEL and SUSE); for an
    image, where it is built."""
    from aiaudit.linux.packages.install import family, install_and_enable

    unit = "chronyd" if family(host) in ("rhel", "suse") else "chrony"
    snippets, manual = install_and_enable(host, "chrony", unit,
                                         "install chrony, start it now and at boot")
    return Remediation("Enable a time synchronisation daemon (chrony is the usual choice for "
                       "servers; point it at the site's NTP servers).", snippets,
                       manual=manual)


@record
class Units:
    """The time sync units at boot."""

    enabled: tuple[str, ...]
    """Installed and enabled units."""
    evidence: tuple[Evidence, ...]
    """The wants links that enable them."""
    idle: tuple[Evidence, ...]
    """Why none of the others starts at boot: units installed but not enabled, masked or
    unreadable, and where the missing ones were looked for."""
    disabled: tuple[str, ...] = ()
    """Installed units that are not enabled (neither masked nor unreadable)."""


def run(ctx: CheckContext) -> Iterator[Result]:
    """PASS when a time sync daemon is enabled (and, live, running)."""
    host = ctx.host
    if not boots(host):
        yield Result(Status.SKIP, SUBJECT, NOT_BOOTED)
        return
    units = boot_units(host)
    if host.live:
        yield _live(units, running(host), host)
    else:
        yield _offline(units, host)


def boot_units(host: Host) -> Units:
    """Which of :data:`UNITS` start at boot, and why the others do not."""
    from aiaudit.linux.systemd.units import is_enabled, load_unit, search_text, unit_evidence

    enabled: list[str] = []
    evs: list[Evidence] = []
    idle: list[Evidence] = []
    absent: list[str] = []
    disabled: list[str] = []
    for u in UNITS:
        try:
            unit = load_unit(host, u)
        except (HostError, ParseError) as exc:
            idle.append(Evidence.default(f"unit {u}", f"cannot be read: {exc}"))
            continue
        if not unit.exists:
            if unit.masked and unit.path:
                idle.append(Evidence.file(unit.path, None, f"{u} is masked"))
            else:
                absent.append(u)
            continue
        en = is_enabled(host, u)
        if en.enabled:
            enabled.append(u)
            if en.evidence:
                evs.append(Evidence.file(en.evidence))
        else:
            disabled.append(u)
            idle.append(unit_evidence(host, u, en))
    if absent:
        idle.append(Evidence.default(f"time sync units: {search_text(absent)}",
                                     "none installed" if len(absent) == len(UNITS)
                                     else "not installed"))
    return Units(tuple(enabled), tuple(evs), tuple(idle), tuple(disabled))


def running(host: Host) -> list[tuple[str, str]]:
    """Live, ``(comm, pid)`` of the first process of each running daemon of
    :data:`COMMS`, in ``/proc`` order."""
    found: list[tuple[str, str]] = []
    for pid in host.listdir("/proc")[:MAX_PIDS]:
        if not pid.isdigit():
            continue
        try:
            comm = (host.try_read_text(f"/proc/{pid}/comm") or "").strip()
        except HostError:
            continue
        if comm in COMMS and comm not in (c for c, _ in found):
            found.append((comm, pid))
    return found


def _note(enabled: tuple[str, ...]) -> str:
    """The message's note when more than one daemon is enabled."""
    return (f"; more than one is enabled ({', '.join(enabled)}): they fight over the clock"
            if len(enabled) > 1 else "")


def _live(units: Units, procs: list[tuple[str, str]], host: Host) -> Result:
    """Live: a daemon runs, and its unit is enabled."""
    names = [c for c, _ in procs]
    evs = (*units.evidence, *(Evidence.runtime(f"/proc/{pid}/comm", c) for c, pid in procs))
    if not procs:
        looked = Evidence.default(f"processes: {', '.join(COMMS)} in /proc/<pid>/comm",
                                  "none running")
        if units.enabled:  # the boot configuration is right: start what it starts
            return Result(Status.FAIL, SUBJECT, "no time synchronisation daemon is running "
                          f"({', '.join(units.enabled)} enabled but not running): the boot "
                          f"configuration is right; it was stopped or failed"
                          f"{_note(units.enabled)}",
                          expected="running", actual="none", aspect=Aspect.DRIFT,
                          evidence=(*evs, looked), remediation=start(units.enabled))
        return Result(Status.FAIL, SUBJECT, "no time synchronisation daemon is running",
                      expected="running", actual="none", aspect=Aspect.RUNTIME,
                      evidence=(*evs, *units.idle, looked), remediation=install_fix(host))
    if not units.enabled:
        return Result(Status.FAIL, SUBJECT, f"{', '.join(names)} runs but no time sync unit is "
                      "enabled: it stops at the next reboot", expected="enabled",
                      actual="not enabled", aspect=Aspect.DRIFT, evidence=(*evs, *units.idle),
                      remediation=enable(names, units.disabled, host))
    return Result(Status.PASS, SUBJECT, f"{', '.join(names)} is running and "
                  f"{', '.join(units.enabled)} is enabled{_note(units.enabled)}",
                  expected="running", actual=", ".join(names), aspect=Aspect.RUNTIME,
                  evidence=evs)


def start(enabled: tuple[str, ...]) -> Remediation:
    """The fix for drift (a unit is enabled, no daemon runs): start the enabled unit, as
    the boot does; nothing to install or enable.  With several enabled, the first (they
    should not all run: the note says so)."""
    unit = enabled[0]
    return Remediation(f"Start {unit}, which the boot starts; the boot configuration is "
                       "already right. If it fails again, `systemctl status "
                       f"{unit}` says why.",
                       (Snippet.command(f"systemctl start {unit}", "start it as at boot"),))


def enable(names: list[str], disabled: tuple[str, ...], host: Host) -> Remediation:
    """The fix when a daemon runs but no unit is enabled: enable its installed unit (it
    runs already: nothing to install or start); else :func:`install_fix`."""
    unit = next((u for c in names for u in UNITS_OF.get(c, ()) if u in disabled), None)
    if unit is None:
        return install_fix(host)
    return Remediation(f"Enable {unit} so the running {names[0]} also starts at boot.",
                       (Snippet.enable(unit, "start it at every boot"),))


def _offline(units: Units, host: Host) -> Result:
    """Offline: a daemon's unit is enabled."""
    if units.enabled:
        return Result(Status.PASS, SUBJECT, f"{', '.join(units.enabled)} is "
                      f"enabled{_note(units.enabled)}", expected="enabled",
                      actual=", ".join(units.enabled), aspect=Aspect.PERSISTED,
                      evidence=units.evidence)
    return Result(Status.FAIL, SUBJECT, "no time synchronisation unit is installed and "
                  f"enabled (looked for {', '.join(UNITS)})", expected="enabled",
                  actual="none", aspect=Aspect.PERSISTED, evidence=units.idle,
                  remediation=install_fix(host))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``time.sync``."""
    return [CheckSpec(id="time.sync", title="A time synchronisation daemon is active", run=run,
                      params_schema={"type": "object", "additionalProperties": False},
                      description="chrony, systemd-timesyncd, ntpd/ntpsec or openntpd enabled "
                                  "at boot; live, also running.")]
