"""Send SIEM events to the local syslog socket (``aiaudit scan --syslog``), for cron use.

Messages are formatted as glibc's ``syslog(3)`` writes them to ``/dev/log`` (the RFC 3164
local form ``<PRI>Mmm dd hh:mm:ss ident[pid]: message``), which rsyslog, syslog-ng and
systemd-journald all parse; the message is one JSON event (``schemas/event.schema.json``).
A message is kept under ``max_bytes`` (rsyslog's default ``$MaxMessageSize`` is 8 KiB) by
shortening the event, never by cutting the JSON.  Sending never hangs: the socket has a
timeout and the whole delivery a deadline; a missing, refusing or full socket is a
:class:`SyslogError` with one message.
"""

from __future__ import annotations

import errno
import os
import socket
import time
from typing import Any, Iterable, Mapping

from aiaudit.core.errors import AuditError

DEFAULT_SOCKET = "/dev/log"
DEFAULT_MAX_BYTES = 8192
IDENT = "aiaudit"
FACILITIES = {"user": 1, "daemon": 3, "auth": 4, "authpriv": 10, "local0": 16, "local1": 17,
              "local2": 18, "local3": 19, "local4": 20, "local5": 21, "local6": 22,
              "local7": 23}
"""syslog(3) facility codes (``<syslog.h>``)."""

# syslog(3) severities: 2 crit, 3 err, 4 warning, 5 notice, 6 info.
_FAIL_PRIORITY = {"critical": 2, "high": 3, "medium": 4, "low": 5, "info": 5}
_STATUS_PRIORITY = {"error": 4, "waived": 5, "skip": 6, "pass": 6}


class SyslogError(AuditError):
    """The events could not be delivered to syslog."""


def priority(event: Mapping[str, Any]) -> int:
    """The syslog severity for one event (failures by rule severity)."""
    if event.get("event") == "summary":
        counts = event.get("counts") or {}
        return 4 if counts.get("fail") else 6
    status = str(event.get("status"))
    if status == "fail":
        return _FAIL_PRIORITY.get(str(event.get("severity")), 4)
    return _STATUS_PRIORITY.get(status, 6)


def fit(event: Mapping[str, Any], max_bytes: int) -> str:
    """The event as one JSON line of at most ``max_bytes`` UTF-8 bytes (fields shortened
    and ``"truncated": true`` added when needed; the JSON stays valid)."""
    from aiaudit.reporters.events import dumps

    line = dumps(event)
    if len(line.encode("utf-8")) <= max_bytes:
        return line
    ev = dict(event)
    ev["truncated"] = True
    ev.pop("remediation", None)
    for limit in (1024, 256, 64):
        ev["evidence"] = [{**e, "value": _cut(e["value"], limit)} if "value" in e else e
                          for e in event.get("evidence") or []]
        for key in ("message", "title", "subject", "expected", "actual"):
            if isinstance(event.get(key), str):
                ev[key] = _cut(event[key], limit * 2)
        if "notices" in ev:
            ev["notices"] = [_cut(n, limit) for n in event["notices"]][:10]
        line = dumps(ev)
        if len(line.encode("utf-8")) <= max_bytes:
            return line
    if "evidence" in ev:
        ev["evidence"] = []
    for key in ("message", "title", "expected", "actual", "remediation"):
        if isinstance(ev.get(key), str):
            ev[key] = _cut(ev[key], 16)
    line = dumps(ev)
    if len(line.encode("utf-8")) <= max_bytes:
        return line
    raise SyslogError(f"an event does not fit in {max_bytes} bytes even when shortened")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def format_message(line: str, pri: int, facility: int, *, ident: str = IDENT,
                   now: float | None = None, pid: int | None = None) -> bytes:
    """One datagram in the ``syslog(3)`` local format."""
    stamp = time.strftime("%b %e %H:%M:%S", time.localtime(now))
    head = f"<{facility * 8 + pri}>{stamp} {ident}[{pid or os.getpid()}]: "
    return (head + line).encode("utf-8")


def send(events: Iterable[Mapping[str, Any]], *, socket_path: str = DEFAULT_SOCKET,
         facility: str = "user", max_bytes: int = DEFAULT_MAX_BYTES, timeout: float = 2.0,
         deadline: float = 10.0) -> int:
    """Send every event to the syslog socket; returns how many were sent.

    Raises :class:`SyslogError` when the socket is absent, refuses, or stays full past
    ``timeout`` (per message) or ``deadline`` (all messages together).
    """
    fac = FACILITIES[facility]
    items = list(events)
    sock, stream = _connect(socket_path, timeout)
    end = time.monotonic() + deadline
    sent = 0
    try:
        for ev in items:
            head = 64 + len(IDENT)  # "<PRI>Mmm dd hh:mm:ss ident[pid]: "
            data = format_message(fit(ev, max_bytes - head), priority(ev), fac)
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("delivery deadline reached")
            sock.settimeout(min(timeout, left))
            if stream:
                sock.sendall(data + b"\0")  # glibc terminates stream messages with NUL
            else:
                sock.send(data)
            sent += 1
    except (TimeoutError, OSError) as exc:
        why = "timed out (is syslog stuck?)" if isinstance(exc, TimeoutError) else (
            exc.strerror or str(exc))
        raise SyslogError(f"syslog socket {socket_path}: {why}; sent {sent} of "
                          f"{len(items)} events") from None
    finally:
        sock.close()
    return sent


def _connect(path: str, timeout: float) -> tuple[socket.socket, bool]:
    """A connected socket to ``path``: datagram, or stream where syslogd listens on one
    (glibc falls back the same way on ``EPROTOTYPE``)."""
    for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
        sock = socket.socket(socket.AF_UNIX, kind)
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            return sock, kind == socket.SOCK_STREAM
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EPROTOTYPE and kind == socket.SOCK_DGRAM:
                continue
            why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            raise SyslogError(f"cannot connect to syslog socket {path}: {why}") from None
    raise SyslogError(f"cannot connect to syslog socket {path}")  # pragma: no cover
