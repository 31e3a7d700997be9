"""The effective sysctl set of one run: every sysctl.d line indexed by the key it can set,
built once per run and shared by every sysctl rule (and every check that asks what boot
writes to a key)."""

from __future__ import annotations

import heapq
import posixpath
from typing import Callable, Sequence

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
        self._systemd = _Buckets(cfg.entries, lambda e: e.key)
        self._procps = _Buckets(cfg.procps_entries, _procps_path)
        self._tuned: dict[str, list[sp.Entry]] | None = None

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
            entries = self._procps.get(target)
        return sp.procps_decide(entries, key, globs=self.cfg.procps_globs,
                                glob_exclude=self.cfg.procps_glob_exclude)

    def tuned_reapplied(self, key: str) -> list[sp.Entry]:
        """The literal lines that tuned's ``reapply_sysctl`` writes to ``key``, in order."""
        if self._tuned is None:
            self._tuned = {}
            for e in self.cfg.tuned_reapply_entries:
                if not e.is_glob and e.value is not None:
                    self._tuned.setdefault(e.key, []).append(e)
        return self._tuned.get(key, [])


def _procps_path(e: sp.Entry) -> str:
    """The path procps_decide compares with the target for a literal line."""
    path = sp.PROC_SYS + e.key
    if "//" in path or "/." in path or path.endswith("/"):
        return posixpath.normpath(path)
    return path


class _Buckets:
    """Entries by a key of literal lines, with every glob line, keeping file order."""

    def __init__(self, entries: Sequence[sp.Entry], keyfn: Callable[[sp.Entry], str]) -> None:
        self._by: dict[str, list[tuple[int, sp.Entry]]] = {}
        self._globs: list[tuple[int, sp.Entry]] = []
        for i, e in enumerate(entries):
            if e.is_glob:
                self._globs.append((i, e))
            else:
                self._by.setdefault(keyfn(e), []).append((i, e))

    def get(self, key: str) -> list[sp.Entry]:
        """Literal lines of ``key`` and every glob line, in file order."""
        lits = self._by.get(key, [])
        if not self._globs:
            return [e for _, e in lits]
        return [e for _, e in heapq.merge(lits, self._globs, key=lambda t: t[0])]


def resolved(host: Host) -> Resolved:
    """The run's effective sysctl set (loaded and indexed once per run, per Host)."""
    return host.memo(("sysctl-resolved",), lambda: Resolved(loaded(host)))
