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
MAX_PIDS = 65536
SUBJECT = "time sync"

FIX = Remediation("Enable a time synchronisation daemon (chrony is the usual choice for "
                  "servers; point it at the site's NTP servers).", (
                      Snippet.command("apt-get install chrony  # or: dnf install chrony",
                                      "install chrony"),
                      Snippet.command("systemctl enable --now chrony  # chronyd on RHEL",
                                      "start it now and at boot")))


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


def run(ctx: CheckContext) -> Iterator[Result]:
    """PASS when a time sync daemon is enabled (and, live, running)."""
    host = ctx.host
    if not boots(host):
        yield Result(Status.SKIP, SUBJECT, NOT_BOOTED)
        return
    units = boot_units(host)
    if host.live:
        yield _live(units, running(host))
    else:
        yield _offline(units)


def boot_units(host: Host) -> Units:
    """Which of :data:`UNITS` start at boot, and why the others do not."""
    from aiaudit.linux.systemd.units import is_enabled, load_unit, search_text, unit_evidence

    enabled: list[str] = []
    evs: list[Evidence] = []
    idle: list[Evidence] = []
    absent: list[str] = []
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
            idle.append(unit_evidence(host, u, en))
    if absent:
        idle.append(Evidence.default(f"time sync units: {search_text(absent)}",
                                     "none installed" if len(absent) == len(UNITS)
                                     else "not installed"))
    return Units(tuple(enabled), tuple(evs), tuple(idle))


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


def _live(units: Units, procs: list[tuple[str, str]]) -> Result:
    """Live: a daemon runs, and its unit is enabled."""
    names = [c for c, _ in procs]
    evs = (*units.evidence, *(Evidence.runtime(f"/proc/{pid}/comm", c) for c, pid in procs))
    if not procs:
        looked = Evidence.default(f"processes: {', '.join(COMMS)} in /proc/<pid>/comm",
                                  "none running")
        return Result(Status.FAIL, SUBJECT, "no time synchronisation daemon is running"
                      + (f" ({', '.join(units.enabled)} enabled but not running)"
                         if units.enabled else ""), expected="running", actual="none",
                      aspect=Aspect.RUNTIME, evidence=(*evs, *units.idle, looked),
                      remediation=FIX)
    if not units.enabled:
        return Result(Status.FAIL, SUBJECT, f"{', '.join(names)} runs but no time sync unit is "
                      "enabled: it stops at the next reboot", expected="enabled",
                      actual="not enabled", aspect=Aspect.DRIFT, evidence=(*evs, *units.idle),
                      remediation=FIX)
    return Result(Status.PASS, SUBJECT, f"{', '.join(names)} is running and "
                  f"{', '.join(units.enabled)} is enabled{_note(units.enabled)}",
                  expected="running", actual=", ".join(names), aspect=Aspect.RUNTIME,
                  evidence=evs)


def _offline(units: Units) -> Result:
    """Offline: a daemon's unit is enabled."""
    if units.enabled:
        return Result(Status.PASS, SUBJECT, f"{', '.join(units.enabled)} is "
                      f"enabled{_note(units.enabled)}", expected="enabled",
                      actual=", ".join(units.enabled), aspect=Aspect.PERSISTED,
                      evidence=units.evidence)
    return Result(Status.FAIL, SUBJECT, "no time synchronisation unit is installed and "
                  f"enabled (looked for {', '.join(UNITS)})", expected="enabled",
                  actual="none", aspect=Aspect.PERSISTED, evidence=units.idle,
                  remediation=FIX)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``time.sync``."""
    return [CheckSpec(id="time.sync", title="A time synchronisation daemon is active", run=run,
                      params_schema={"type": "object", "additionalProperties": False},
                      description="chrony, systemd-timesyncd, ntpd/ntpsec or openntpd enabled "
                                  "at boot; live, also running.")]
