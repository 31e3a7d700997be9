"""``/etc/passwd``, ``/etc/group`` and ``/etc/nsswitch.conf`` as glibc's ``files`` backend
reads them (passwd(5), group(5), nsswitch.conf(5)).

A passwd line is ``name:passwd:uid:gid:gecos:dir:shell``; a group line is
``name:passwd:gid:member,member``.  glibc's files backend skips lines it cannot parse
(``nss_files/files-parse.c``: a non-numeric uid/gid makes the entry unusable); the first entry
of a name wins (``getpwnam``/``getgrnam`` stop at the first match).  ``+``/``-`` lines are NIS
``compat`` markers: the database then extends beyond the file.
"""

from __future__ import annotations

import re
from typing import Protocol

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record

LOCAL_NSS_SOURCES = frozenset({"files", "compat", "systemd", "db", "cache", "altfiles"})
"""nsswitch sources that add no directory-service users or groups (``systemd`` only
synthesises root/nobody and DynamicUser= accounts)."""


@record
class Account:
    """One passwd entry."""

    name: str
    uid: int
    gid: int
    home: str = ""
    shell: str = ""
    line: int = 0


@record
class Group:
    """One group entry."""

    name: str
    gid: int
    members: tuple[str, ...] = ()
    line: int = 0


class Directory(Protocol):
    """The system's own user and group lookups (NSS: ``getpwnam``, ``getgrnam``,
    ``getgrgid``, ``getgrouplist``), as :class:`aiaudit.linux.accounts.nss.Resolver` asks
    them on the live ``/``."""

    def passwd(self, name: str) -> Account | None:
        """``getpwnam(name)``."""

    def group(self, name: str) -> Group | None:
        """``getgrnam(name)``."""

    def group_by_gid(self, gid: int) -> Group | None:
        """``getgrgid(gid)``."""

    def grouplist(self, name: str, gid: int) -> frozenset[int]:
        """``getgrouplist(name, gid)``."""


@record
class Database:
    """Users and groups of one root, with lookups as glibc does them: through this
    machine's NSS when ``nss`` is set (the live ``/``), else as its files backend does.

    ``accounts`` and ``groups`` are always the files' entries (what can be listed); with
    ``nss`` the lookups may also find directory users and groups, and may raise
    :class:`~aiaudit.linux.accounts.nss.NssTimeout` (a ``HostError``)."""

    accounts: tuple[Account, ...]
    groups: tuple[Group, ...]
    compat: bool = False
    """The files hold NIS ``+``/``-`` entries."""
    nss: Directory | None = None
    """This machine's NSS (only for the real ``/`` scanned live)."""

    def user(self, name: str) -> Account | None:
        """``getpwnam``: the first entry with that name."""
        if self.nss is not None:
            return self.nss.passwd(name)
        return next((a for a in self.accounts if a.name == name), None)

    def group(self, name: str) -> Group | None:
        """``getgrnam``: the first entry with that name."""
        if self.nss is not None:
            return self.nss.group(name)
        return next((g for g in self.groups if g.name == name), None)

    def group_by_gid(self, gid: int) -> Group | None:
        """``getgrgid``: the first entry with that gid."""
        if self.nss is not None:
            return self.nss.group_by_gid(gid)
        return next((g for g in self.groups if g.gid == gid), None)

    def supplementary_gids(self, user: Account) -> set[int]:
        """``getgrouplist``: the primary gid plus every group listing the user as member."""
        if self.nss is not None:
            return {user.gid} | set(self.nss.grouplist(user.name, user.gid))
        return {user.gid} | {g.gid for g in self.groups if user.name in g.members}


def _int(field: str) -> int | None:
    return (int(field) if len(field) <= 10 and re.fullmatch(r"[0-9]+", field)
            and int(field) < 2**32 else None)


def _rows(text: str, what: str, min_fields: int) -> tuple[list[tuple[int, list[str]]], bool]:
    """Colon-separated rows with at least ``min_fields`` fields, and whether NIS compat
    (``+``/``-``) lines were seen."""
    if "\x00" in text:
        raise ParseError(f"binary content in {what} file")
    rows: list[tuple[int, list[str]]] = []
    compat = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line[0] in "+-":
            compat = True
            continue
        f = line.split(":")
        if len(f) >= min_fields and f[0]:
            rows.append((n, f))
    return rows, compat


def parse_passwd(text: str) -> tuple[list[Account], bool]:
    """Entries of a passwd file and whether it has NIS compat (``+``/``-``) lines."""
    rows, compat = _rows(text, "passwd", 4)
    out: list[Account] = []
    for n, f in rows:
        uid, gid = _int(f[2]), _int(f[3])
        if uid is not None and gid is not None:
            out.append(Account(f[0], uid, gid, f[5] if len(f) > 5 else "",
                               f[6] if len(f) > 6 else "", n))
    return out, compat


def parse_group(text: str) -> tuple[list[Group], bool]:
    """Entries of a group file and whether it has NIS compat (``+``/``-``) lines."""
    rows, compat = _rows(text, "group", 3)
    out: list[Group] = []
    for n, f in rows:
        gid = _int(f[2])
        if gid is not None:
            members = tuple(m.strip() for m in f[3].split(",") if m.strip()) \
                if len(f) > 3 else ()
            out.append(Group(f[0], gid, members, n))
    return out, compat


def parse_nsswitch(text: str) -> dict[str, list[str]]:
    """``{database: [source, ...]}`` from nsswitch.conf (``[...]`` actions dropped).

    A database named twice: the last line counts (glibc 2.36, checked with ``getent``),
    and names are case-sensitive (``PASSWD:`` is no passwd line)."""
    return {db: _drop_actions(rest).split() for db, (_n, rest) in _nss_lines(text).items()}


def nsswitch_line(text: str, database: str) -> tuple[int, str] | None:
    """(line number, the line without its comment) of the line that sets ``database``,
    for evidence; ``None`` when no line does (glibc's default then applies)."""
    got = _nss_lines(text).get(database)
    if got is None:
        return None
    n = got[0]
    return n, text.splitlines()[n - 1].split("#", 1)[0].strip()


def _nss_lines(text: str) -> dict[str, tuple[int, str]]:
    """``{database: (line number, the text after its colon)}``, the last line of each."""
    if "\x00" in text:
        raise ParseError("binary content in nsswitch.conf")
    out: dict[str, tuple[int, str]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        db, sep, rest = line.partition(":")
        if not sep or not db.strip():
            continue
        out[db.strip()] = (n, rest)
    return out


def _drop_actions(text: str) -> str:
    """``text`` with each ``[...]`` replaced by a space, as ``re.sub(r"\\[[^\\]]*\\]")``
    does, in linear time (the expression tried every ``[`` to the end of a line of
    thousands of ``[``: quadratic)."""
    out = []
    i = 0
    while True:
        j = text.find("[", i)
        k = text.find("]", j + 1) if j >= 0 else -1
        if k < 0:
            break
        out.append(text[i:j])
        out.append(" ")
        i = k + 1
    out.append(text[i:])
    return "".join(out)


def remote_sources(nsswitch: dict[str, list[str]], database: str) -> list[str]:
    """Sources of ``database`` that may add entries not in the files (sss, ldap, nis...).

    A missing database line means glibc's default (``files`` for passwd/group on modern
    glibc): nothing remote."""
    return [s for s in nsswitch.get(database, []) if s not in LOCAL_NSS_SOURCES]
