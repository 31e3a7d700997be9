"""Where a sysctl fix goes so that it really is the last assignment at boot."""

from __future__ import annotations

from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl.files import SysctlConfig
from aiaudit.linux.sysctl.resolved import Resolved

DROPIN = "/etc/sysctl.d/99-zz-aiaudit.conf"
"""Remediation drop-in: in /etc (beats same-named vendor files) and sorting after
Debian's ``99-sysctl.conf`` link, so its lines are the last assignment at boot."""


def fnmatch_key(entry: sp.Entry, key: str) -> bool:
    """True if ``entry`` (explicit or glob) sets ``key``."""
    return sp.fnmatch_fast(key, entry.key) if entry.is_glob else entry.key == key


def dropin_path(cfg: SysctlConfig | Resolved, key: str) -> str | None:
    """Where the fix for ``key`` goes: :data:`DROPIN`, unless a file that sets the key sorts
    at or after it (e.g. ``99-zzz-local.conf``); then a name that sorts after every such
    file (strcmp order), so the fix really is the last assignment at boot.  ``None`` when no
    sensible name sorts last (a setter named with bytes above ``z``): edit that file."""
    d, _, name = DROPIN.rpartition("/")
    entries = cfg.systemd_entries(key) if isinstance(cfg, Resolved) else cfg.entries
    setters = [e.file.rpartition("/")[2].encode("utf-8", "surrogateescape")
               for e in entries if fnmatch_key(e, key) and e.value is not None]
    for _ in range(8):
        if not any(b >= name.encode() for b in setters):
            return f"{d}/{name}"
        name = "z" + name
    return None
