"""systemd settings that lost: the assignments a unit's effective value overrode, and
the drop-in a fix must write to win.

systemd reads a unit file, then every drop-in of the unit (``foo.service.d``, prefix and
template ``.d`` directories, ``service.d``) sorted by file name *across* the unit
directories (a file in ``/etc`` hides a same-named one in ``/run`` or ``/usr/lib``); for a
single-valued setting such as ``LimitNOFILE=`` the last assignment wins and an empty one
resets it to the default (systemd.unit(5) "drop-ins", systemd.syntax(7)).  So a site's
``/etc/systemd/system/slurmd.service.d/10-limits.conf`` loses to the vendor's
``/usr/lib/systemd/system/slurmd.service.d/50-defaults.conf``.  The same holds for the
manager's ``system.conf`` and ``system.conf.d`` (systemd-system.conf(5)).
"""

from __future__ import annotations

from typing import Any, Iterable

from aiaudit.core.model import Evidence
from aiaudit.linux.sortlast import name_after
from aiaudit.linux.systemd.unitfile import Assignment

MAX_SHOWN = 6
"""Overridden assignments shown as evidence per result (more are in ``data``)."""
MAX_DATA = 50
"""Overridden assignments listed in ``data`` per result (a bound for hostile files)."""
ORDER = ("the unit file is read first, then its drop-ins sorted by file name across "
         "/etc, /run and /usr/lib; the last assignment wins")


def _where(a: Assignment) -> str:
    return f"{a.file.lstrip('/')}:{a.line}"


def overridden(assignments: Iterable[Assignment], section: str, key: str
               ) -> list[tuple[Assignment, str]]:
    """Every assignment of single-valued ``section.key`` before the one that decides,
    with why it lost (the effective one is the last; an empty one resets)."""
    mine = [a for a in assignments if a.section == section and a.key == key]
    if len(mine) < 2:
        return []
    win = mine[-1]
    out = []
    for a in mine[:-1]:
        if a.file == win.file:
            why = (f"{key}={win.value} at {_where(win)} comes later in the same file: the "
                   "last assignment wins")
        elif not win.value:
            why = f"the empty {key}= at {_where(win)} resets it ({ORDER})"
        else:
            why = f"{key}={win.value} at {_where(win)} is read later ({ORDER})"
        out.append((a, why))
    return out


def evidence(lost: Iterable[tuple[Assignment, str]]) -> tuple[Evidence, ...]:
    """One ``file`` evidence per overridden assignment, saying why it lost."""
    return tuple(Evidence.file(a.file, a.line, f"{a.key}={a.value} (overridden: {why})")
                 for a, why in list(lost)[:MAX_SHOWN])


def data(lost: Iterable[tuple[Assignment, str]]) -> list[dict[str, Any]]:
    """The overridden assignments for the JSON report."""
    return [{"source": _where(a), "line": f"{a.key}={a.value}", "why": why}
            for a, why in list(lost)[:MAX_DATA]]


def winning_dropin(unit: str, dropins: Iterable[str], preferred: str) -> str:
    """The path of a drop-in of ``unit`` under /etc that is read after every existing
    drop-in ``dropins`` (host paths, any .d directory): ``preferred`` (a file name) unless
    a drop-in sorts after it."""
    names = [p.rsplit("/", 1)[-1] for p in dropins]
    return f"/etc/systemd/system/{unit}.d/{name_after(names, preferred)}"
