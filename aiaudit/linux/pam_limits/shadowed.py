"""pam_limits lines that lost, as evidence: what a failing limit overrode and why.

:func:`aiaudit.linux.pam_limits.conf.decide` records every matching line whose soft or hard
side did not survive (:class:`~aiaudit.linux.pam_limits.conf.Shadow`): a later line of the
same rank overwrote it (the last one read wins: limits.conf, then limits.d in byte order of
the file names), or a better-ranked line (user or uid range < ``@group`` < ``*``) had set the
side first.  A person who edited one of those lines sees why the edit did nothing.

A fix wins where it is read last among lines of the deciding rank: :func:`winning_dropin`
names a limits.d file that sorts after every file there (vendor directory included).
"""

from __future__ import annotations

from typing import Any, Iterable

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.linux.pam_limits import conf as lp
from aiaudit.linux.pam_limits.files import LIMITS_D, VENDOR_LIMITS_D
from aiaudit.linux.sortlast import name_after

MAX_SHADOWED = 6
"""Overridden lines shown as evidence per result (more are in ``data``)."""
MAX_DATA = 50
"""Overridden lines listed in ``data`` per result (a bound for hostile files)."""


def lost(shadows: Iterable[lp.Shadow], item: str, side: str) -> list[lp.Shadow]:
    """The lines that lost ``side`` of ``item``, once each, in the order they lost."""
    seen: set[tuple[str, int]] = set()
    out: list[lp.Shadow] = []
    for s in shadows:
        k = (s.line.file, s.line.line)
        if s.line.item == item and s.side == side and k not in seen:
            seen.add(k)
            out.append(s)
    return out


def evidence(shadows: Iterable[lp.Shadow]) -> tuple[Evidence, ...]:
    """One ``file`` evidence per overridden line: its text and why it lost."""
    return tuple(Evidence.file(s.line.file, s.line.line,
                               f"{s.line.raw} (overridden: {s.why})")
                 for s in list(shadows)[:MAX_SHADOWED])


def data(shadows: Iterable[lp.Shadow]) -> list[dict[str, Any]]:
    """The overridden lines for the JSON report: where, the line, the side, what beat it
    and why."""
    return [{"source": s.line.where, "line": s.line.raw, "side": s.side,
             "overridden_by": s.by.where, "why": s.why} for s in list(shadows)[:MAX_DATA]]


def winning_dropin(host: Host, preferred: str) -> str:
    """The limits.d path a fix writes: ``preferred`` (a path in /etc/security/limits.d)
    unless a file there or in the vendor limits.d sorts after it, then a name that sorts
    after them all (pam_limits reads limits.d in byte order; same rank: the last wins)."""
    d, _, base = preferred.rpartition("/")
    names: list[str] = []
    for ld in (LIMITS_D, VENDOR_LIMITS_D):
        try:
            got = host.listdir(ld)
        except HostError:
            continue
        names += [n for n in got if n.endswith(".conf") and not n.startswith(".")]
    return f"{d}/{name_after(names, base)}"
