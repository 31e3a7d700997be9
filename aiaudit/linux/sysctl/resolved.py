"""The effective sysctl set of one run: every sysctl.d line indexed by the key it can set,
built once per run and shared by every sysctl rule (and every check that asks what boot
writes to a key)."""

from __future__ import annotations

import heapq
import posixpath
from typing import Any, Callable, Sequence

from aiaudit.core.host import Host
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl.files import SysctlConfig, loaded


class Resolved:
    """The effective sysctl set of one run: :class:`SysctlConfig` indexed so that each rule
    decides its key from the lines that can set that key, not from every line of every
    file (with 2,000 sysctl.d files each rule re-scanned ~12,000 lines: +60 M instructions
    per rule).  Built once per run (:func:`resolved`) and shared by every sysctl rule.

    The deciders of :mod:`aiaudit.linux.sysctl.conf` still decide, on the subsequence of the
    entries (in file order) that can matter for the key; the answer is the same as on all
    entries:

    - systemd-sysctl: a literal line for another key neither is ``key``'s explicit value
      nor a glob, and deleting/re-adding it in the ordered map leaves the order of the glob
      keys unchanged, so the literal lines of ``key`` plus every glob decide the same.
    - procps: a literal line decides only when its path (normalised as procps_decide does)
      is the target; a literal line stops a glob only when its path is exactly the
      expanded path, which then normalises to the target.  That holds when the target is
      already normal (no ``..`` component); otherwise every entry is used.
    """

    def __init__(self, cfg: SysctlConfig) -> None:
        self.cfg = cfg
        self._systemd = _Buckets(cfg.entries, _systemd_key)
        self._procps = _Buckets(cfg.procps_entries, _procps_key)
        self._tuned: _Buckets | None = None

    def systemd_entries(self, key: str) -> list[sp.Entry]:
        """The entries, in file order, that can decide ``key`` for systemd-sysctl (its
        literal lines and every glob); also every line
        :func:`aiaudit.linux.sysctl.dropin.fnmatch_key` accepts."""
        return self._systemd.get(key)

    def systemd_decide(self, key: str) -> sp.Decision:
        """:func:`aiaudit.linux.sysctl.conf.systemd_decide` of ``key`` on the whole set."""
        return sp.systemd_decide(self.systemd_entries(key), key)

    def procps_decide(self, key: str) -> sp.Decision:
        """:func:`aiaudit.linux.sysctl.conf.procps_decide` of ``key`` on the whole set."""
        target = sp.PROC_SYS + key
        if posixpath.normpath(target) != target:
            entries: Sequence[sp.Entry] = self.cfg.procps_entries
        else:
            entries = self._procps.get(key)
        return sp.procps_decide(entries, key, globs=self.cfg.procps_globs,
                                glob_exclude=self.cfg.procps_glob_exclude)

    def tuned_reapplied(self, key: str) -> list[sp.Entry]:
        """The literal lines that tuned's ``reapply_sysctl`` writes to ``key``, in order."""
        if self._tuned is None:
            self._tuned = _Buckets(self.cfg.tuned_reapply_entries, _systemd_key)
        return [e for e in self._tuned.get(key, globs=False) if e.value is not None]


def _systemd_key(e: sp.Entry) -> str:
    """The bucket of a literal line for systemd-sysctl: its normalised key."""
    return e.key


def _procps_key(e: sp.Entry) -> str | None:
    """The bucket of a literal line for procps: the key its path names once normalised as
    procps_decide compares it with ``/proc/sys/<key>`` (``None``: a path outside
    ``/proc/sys``, which no key names).  A plain path is its own key: the entry's string
    is shared, not copied."""
    path = sp.PROC_SYS + e.key
    if "//" in path or "/." in path or path.endswith("/"):
        path = posixpath.normpath(path)
        return path[len(sp.PROC_SYS):] if path.startswith(sp.PROC_SYS) else None
    return e.key


class _Buckets:
    """Entries by the key of literal lines, with every glob line, keeping file order.

    Compact: a key maps to its one line (the common case) or a list of lines; only when
    there are globs, whose lines must be merged in file order with a key's, are lines
    kept as their indices.  100,000 one-line files cost a dictionary slot per line, not a
    list, a tuple and an integer (35 MB before)."""

    def __init__(self, entries: Sequence[sp.Entry],
                 keyfn: Callable[[sp.Entry], str | None]) -> None:
        self._entries = entries
        self._globs = [i for i, e in enumerate(entries) if e.is_glob]
        self._by: dict[str, object] = {}
        by = self._by
        indexed = bool(self._globs)
        for i, e in enumerate(entries):
            if indexed and e.is_glob:
                continue
            k = keyfn(e)
            if k is None:
                continue
            item: object = i if indexed else e
            had = by.get(k)
            if had is None:
                by[k] = item
            elif isinstance(had, list):
                had.append(item)
            else:
                by[k] = [had, item]

    def get(self, key: str, *, globs: bool = True) -> list[sp.Entry]:
        """Literal lines of ``key`` and (``globs``) every glob line, in file order."""
        had = self._by.get(key)
        lits: list[Any] = [] if had is None else had if isinstance(had, list) else [had]
        if not self._globs:
            return list(lits)
        ents = self._entries
        if not globs:
            return [ents[i] for i in lits]
        return [ents[i] for i in heapq.merge(lits, self._globs)]


def resolved(host: Host) -> Resolved:
    """The run's effective sysctl set (loaded and indexed once per run, per Host)."""
    return host.memo(("sysctl-resolved",), lambda: Resolved(loaded(host)))
