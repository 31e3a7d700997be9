"""Processes of the live host, from ``/proc``: the pid of a daemon by its command name."""

from __future__ import annotations

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host


def proc_of(host: Host, comm: str) -> str | None:
    """Lowest pid whose /proc/<pid>/comm is ``comm`` (the daemon's listener), live only."""
    return host.memo(("limits-proc-of", comm), lambda: _scan_proc(host, comm))


def _scan_proc(host: Host, comm: str) -> str | None:
    best: tuple[int, str] | None = None
    for name in host.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if host.read_text(f"/proc/{name}/comm").strip() == comm:
                if best is None or int(name) < best[0]:
                    best = (int(name), name)
        except HostError:
            continue
    return None if best is None else best[1]
