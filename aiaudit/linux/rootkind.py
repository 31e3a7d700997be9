"""What kind of root is scanned: one that boots (it has an init) or one that does not (a
container image uses its host's kernel, clock and services)."""

from __future__ import annotations

from aiaudit.core.host import Host

INITS = ("/sbin/init", "/usr/sbin/init", "/lib/systemd/systemd", "/usr/lib/systemd/systemd")
"""An init program: without one the root is a container image, which runs under its host's
kernel and clock and is rebuilt rather than patched."""


def boots(host: Host) -> bool:
    """Whether the root can boot (has an init, following links: ``/sbin/init`` is a link to
    systemd on most distributions); a live scan always describes a running system."""
    return host.live or any(host.exists(p) for p in INITS)


NOT_BOOTED = ("no init (/sbin/init, systemd) in this root: a container image uses its "
              "host's clock and services")
