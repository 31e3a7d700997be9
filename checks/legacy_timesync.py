"""``time.sync``: a time synchronisation daemon keeps the clock right.

Distributed training (NCCL/Gloo timeouts, checkpoints named by time), Kerberos and the logs a
SIEM correlates all assume synchronised clocks.  At boot: one of chrony (``chrony.service``
on Debian, ``chronyd.service`` on RHEL), ``systemd-timesyncd.service``, ntpd
(``ntp.service``, ``ntpd.service``, ``ntpsec.service``) or ``openntpd.service`` is installed
and enabled (systemd.unit(5) wants links).  Live: one of their processes runs
(``/proc/<pid>/comm``, which the kernel truncates to 15 bytes: ``systemd-timesyn``;
proc(5)).
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
from aiaudit.linux.rootkind import NOT_BOOTED, boots

UNITS = ("chrony.service", "chronyd.service", "systemd-timesyncd.service", "ntp.service",
         "ntpd.service", "ntpsec.service", "openntpd.service")
COMMS = ("chronyd", "systemd-timesyn", "ntpd", "openntpd")
MAX_PIDS = 65536






FIX = Remediation("Enable a time synchronisation daemon (chrony is the usual choice for "
                  "servers; point it at the site's NTP servers).", (
                      Snippet.command("apt-get install chrony  # or: dnf install chrony",
                                      "install chrony"),
                      Snippet.command("systemctl enable --now chrony  # chronyd on RHEL",
                                      "start it now and at boot")))


def run(ctx: CheckContext) -> Iterator[Result]:
    """PASS when a time sync daemon is enabled (and, live, running)."""
    from aiaudit.linux.systemd.units import is_enabled, load_unit, search_text, unit_evidence

    host = ctx.host
    if not boots(host):
        yield Result(Status.SKIP, "time sync", NOT_BOOTED)
        return
    enabled, evs = [], []
    # why none starts at boot: the unit files installed but not enabled (or masked), and
    # where the others were looked for
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
    running: list[str] = []
    if host.live:
        for pid in host.listdir("/proc")[:MAX_PIDS]:
            if not pid.isdigit():
                continue
            try:
                comm = (host.try_read_text(f"/proc/{pid}/comm") or "").strip()
            except HostError:
                continue
            if comm in COMMS and comm not in running:
                running.append(comm)
                evs.append(Evidence.runtime(f"/proc/{pid}/comm", comm))
    note = (f"; more than one is enabled ({', '.join(enabled)}): they fight over the clock"
            if len(enabled) > 1 else "")
    if host.live:
        if not running:
            looked = Evidence.default(f"processes: {', '.join(COMMS)} in /proc/<pid>/comm",
                                      "none running")
            yield Result(Status.FAIL, "time sync", "no time synchronisation daemon is running"
                         + (f" ({', '.join(enabled)} enabled but not running)" if enabled
                            else ""), expected="running", actual="none",
                         aspect=Aspect.RUNTIME, evidence=(*evs, *idle, looked),
                         remediation=FIX)
        elif not enabled:
            yield Result(Status.FAIL, "time sync", f"{', '.join(running)} runs but no time "
                         "sync unit is enabled: it stops at the next reboot",
                         expected="enabled", actual="not enabled", aspect=Aspect.DRIFT,
                         evidence=(*evs, *idle), remediation=FIX)
        else:
            yield Result(Status.PASS, "time sync", f"{', '.join(running)} is running and "
                         f"{', '.join(enabled)} is enabled{note}", expected="running",
                         actual=", ".join(running), aspect=Aspect.RUNTIME, evidence=tuple(evs))
        return
    if enabled:
        yield Result(Status.PASS, "time sync", f"{', '.join(enabled)} is enabled{note}",
                     expected="enabled", actual=", ".join(enabled), aspect=Aspect.PERSISTED,
                     evidence=tuple(evs))
    else:
        yield Result(Status.FAIL, "time sync", "no time synchronisation unit is installed and "
                     f"enabled (looked for {', '.join(UNITS)})", expected="enabled",
                     actual="none", aspect=Aspect.PERSISTED, evidence=tuple(idle),
                     remediation=FIX)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the time sync check."""
    return [CheckSpec(id="time.sync", title="A time synchronisation daemon is active", run=run,
                      params_schema={"type": "object", "additionalProperties": False},
                      description="chrony, systemd-timesyncd, ntpd/ntpsec or openntpd enabled "
                                  "at boot; live, also running.")]
