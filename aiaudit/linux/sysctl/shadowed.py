"""sysctl lines that lost: what a persisted value overrode, and why.

systemd-sysctl reads the ``*.conf`` files of /etc/sysctl.d, /run/sysctl.d,
/usr/local/lib/sysctl.d and /usr/lib/sysctl.d sorted by file name *across* the directories
(a same-named file higher up hides the others) and writes each key's last assignment
(sysctl.d(5), ``src/sysctl/sysctl.c``); a line naming the key exactly makes every glob skip
it.  So a site's ``/etc/sysctl.d/10-fix.conf`` setting ``vm.swappiness = 5`` loses to
``/usr/lib/sysctl.d/50-vendor.conf`` setting 60: the directory does not matter, the name
does.  procps' ``sysctl --system`` writes every line in its order, /etc/sysctl.conf last.

:func:`overridden` gives each losing line of a :class:`~aiaudit.linux.sysctl.conf.Decision`
with why it lost, as evidence and report data for a failing persisted result.
"""

from __future__ import annotations

from typing import Any

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.linux.sysctl import conf as sp

MAX_SHOWN = 6
"""Overridden lines shown as evidence per result (more are in ``data``)."""
SYSTEMD_ORDER = ("systemd-sysctl reads the .conf files of /etc, /run, /usr/local/lib and "
                 "/usr/lib sysctl.d sorted by file name across the directories, and the last "
                 "assignment wins")
PROCPS_ORDER = ("`sysctl --system` writes every line in the order it reads the files "
                "(sysctl.d files sorted by name, /etc/sysctl.conf last), so the last one wins")


def _where(e: sp.Entry) -> str:
    return f"{e.file.lstrip('/')}:{e.line}"


def _base(e: sp.Entry) -> str:
    return e.file.rpartition("/")[2]


def why_lost(lost: sp.Entry, dec: sp.Decision, applier: str) -> str:
    """Why ``lost`` does not decide ``dec.key`` for ``applier`` (``systemd-sysctl`` or
    ``procps``)."""
    win = dec.entry
    if win is None:
        ex = dec.excluded_by
        if ex is not None:
            return f"the exclusion '{ex.raw.strip()}' at {_where(ex)} comes later"
        return "a later line of the same key takes it away"
    shown = f"'{win.raw.strip()}' at {_where(win)}"
    if win.file == lost.file:
        return f"{shown} comes later in the same file: the last assignment wins"
    a, b = _base(lost), _base(win)
    order = (f"{a} sorts before {b}" if a != b else f"{a} is read first")
    if applier == "procps":
        if win.file == sp.SYSCTL_CONF:
            order = "/etc/sysctl.conf is read after every sysctl.d file"
        return f"{shown} is written after it ({order}): {PROCPS_ORDER}"
    if lost.is_glob and not win.is_glob:
        return (f"{shown} names the key exactly, and systemd-sysctl skips a glob for any "
                "key a line names")
    return f"{shown} is read later ({order}): {SYSTEMD_ORDER}"


def overridden(dec: sp.Decision, applier: str) -> list[tuple[sp.Entry, str]]:
    """The lines of ``dec`` that lost, each with why; none with the winner's value
    (those changed nothing)."""
    win = dec.value
    out = []
    for e in dec.overridden[-MAX_DATA:]:  # the last ones lost most recently
        if e.value is not None and win is not None \
                and sp.normalize_value(e.value) == sp.normalize_value(win):
            continue
        out.append((e, why_lost(e, dec, applier)))
    return out


MAX_NAMES = 1024
"""File names of the lower sysctl.d directories looked at per result (a bound for hostile
trees; a vendor directory holds a few dozen)."""
MAX_DATA = 50
"""Overridden lines listed in ``data`` per result."""


def hidden(host: Host, dirs: tuple[str, ...], dec: sp.Decision, applier: str
           ) -> list[tuple[sp.Entry, str]]:
    """Lines for ``dec.key`` in files nobody reads: a file of the same name in an earlier
    directory of ``dirs`` (priority order: /etc, /run, /usr/local/lib, /usr/lib) replaces
    the whole file, so editing ``/usr/lib/sysctl.d/50-vendor.conf`` does nothing while
    ``/etc/sysctl.d/50-vendor.conf`` exists (sysctl.d(5); procps' ``--system`` does the
    same).  Lines with the deciding value are left out.  The hidden files are read once
    per run (:func:`_hidden_index`), whatever the number of failing sysctl rules."""
    prog = "systemd-sysctl" if applier != "procps" else "`sysctl --system`"
    win = sp.normalize_value(dec.value) if dec.value is not None else None
    return [(e, f"{by.lstrip('/')} has the same name and replaces this whole file ({prog} "
                "reads only the first of /etc, /run, /usr/local/lib and /usr/lib sysctl.d "
                "that holds a name)")
            for e, by in _hidden_index(host, dirs).get(dec.key, ())
            if sp.normalize_value(e.value or "") != win]


def _hidden_index(host: Host, dirs: tuple[str, ...]
                  ) -> dict[str, list[tuple[sp.Entry, str]]]:
    """key -> (assignment, the file that hides its file) of every file a same-named file
    in an earlier directory replaces.  Only the lower directories are listed (usually a
    few vendor files); each name is looked up in the directories above it, never a
    listing of /etc's (maybe huge) one."""

    def load() -> dict[str, list[tuple[sp.Entry, str]]]:
        index: dict[str, list[tuple[sp.Entry, str]]] = {}
        looked = 0
        for k, d in enumerate(dirs[1:], 1):
            try:
                names = host.listdir(d)
            except HostError:
                continue
            for name in names:
                if not name.endswith(".conf") or name.startswith("."):
                    continue
                looked += 1
                if looked > MAX_NAMES:
                    return index
                by = next((f"{e}/{name}" for e in dirs[:k]
                           if host.lstat_exists(f"{e}/{name}")), None)
                if by is not None:
                    for e in _assignments(host, f"{d}/{name}"):
                        index.setdefault(e.key, []).append((e, by))
        return index

    return host.memo(("sysctl-hidden", dirs), load)


def _assignments(host: Host, path: str) -> list[sp.Entry]:
    try:
        entries, _ = sp.parse(host.read_text(path), path)
    except (HostError, ParseError, UnicodeDecodeError):
        return []
    return [e for e in entries if e.value is not None]


def evidence(lost: list[tuple[sp.Entry, str]]) -> tuple[Evidence, ...]:
    """One ``file`` evidence per overridden line: its text and why it lost."""
    return tuple(Evidence.file(e.file, e.line, f"{e.raw.strip()} (overridden: {why})")
                 for e, why in lost[:MAX_SHOWN])


def data(lost: list[tuple[sp.Entry, str]]) -> list[dict[str, Any]]:
    """The overridden lines for the JSON report."""
    return [{"source": _where(e), "line": e.raw.strip(), "value": e.value, "why": why}
            for e, why in lost[:MAX_DATA]]
