"""What sudo decides for a user from the scanned root's sudoers policy.

The policy is read as sudo reads it (sudoers(5)): ``/etc/sudoers`` with ``@include`` /
``#include`` (relative paths from the including file's directory, ``%h`` is the host name)
and ``@includedir``/``#includedir`` (names without ``.`` and not ending in ``~``, in lexical
order), at most 128 levels deep.  Entries are parsed by :mod:`aiaudit.linux.accounts.sudoers`.

For "may the user run an arbitrary command as root": aliases are expanded; user, host,
runas and command lists are matched with the last matching item deciding and ``!``
negating; and the last matching command specification in the whole policy wins (sudo's
``sudoers_lookup`` walks the rules in reverse and stops at the first match).  ``NOPASSWD``
on that match, or ``Defaults !authenticate`` applying to the user, makes it password-less.
"""

from __future__ import annotations

from typing import Callable

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.accounts import passwd as pw
from aiaudit.linux.accounts import sudoers as sp

SUDOERS = "/etc/sudoers"
MAX_DEPTH = 128
"""sudo's include depth limit."""
HOSTNAME = "/etc/hostname"

Aliases = dict[tuple[str, str], tuple[str, ...]]
ListMatch = Callable[[tuple[str, ...]], bool | None]


@record
class Policy:
    """The sudoers entries in the order sudo reads them, with where each came from."""

    entries: tuple[tuple[str, sp.Entry], ...]
    files: tuple[str, ...]
    problems: tuple[str, ...]


@record
class Decision:
    """What sudo decides for an arbitrary command run as root."""

    outcome: str
    """``nopasswd``, ``passwd``, ``denied`` or ``none`` (no rule matches)."""
    spec: sp.UserSpec | None
    """The deciding user specification."""
    file: str | None
    """The file it is in."""
    auth_off: bool
    """``Defaults !authenticate`` applies to the user."""


def hostname(host: Host) -> str | None:
    """The scanned root's host name (``/etc/hostname``), or ``None``."""
    try:
        text = host.try_read_text(HOSTNAME)
    except HostError:
        return None
    return text.strip() or None if text else None


def policy(host: Host) -> Policy | None:
    """:func:`load_policy`, memoized per run."""
    return host.memo(("sudoers-policy",), lambda: load_policy(host))


def load_policy(host: Host) -> Policy | None:
    """The policy, or ``None`` without ``/etc/sudoers``."""
    if not host.exists(SUDOERS):
        return None
    reader = _Reader(host, (hostname(host) or "").split(".")[0])
    reader.read(SUDOERS, 0)
    return Policy(tuple(reader.entries), tuple(reader.files), tuple(reader.problems))


class _Reader:
    """sudo's reading of the policy files, includes followed in place."""

    def __init__(self, host: Host, short_name: str) -> None:
        self.host, self.short_name = host, short_name
        self.entries: list[tuple[str, sp.Entry]] = []
        self.files: list[str] = []
        self.problems: list[str] = []

    def read(self, path: str, depth: int) -> None:
        """Add the entries of ``path`` and of the files it includes."""
        if depth > MAX_DEPTH:
            self.problems.append(f"{path}: includes nested deeper than {MAX_DEPTH}")
            return
        try:
            text = self.host.read_text(path, cap=1024 * 1024)
            parsed = sp.parse(text, path)
        except HostError as exc:
            self.problems.append(f"{path}: {exc}")
            return
        except ParseError as exc:
            self.problems.append(f"{path}: {exc}" if path not in str(exc) else str(exc))
            return
        self.files.append(path)
        for e in parsed:
            if isinstance(e, sp.Include):
                self._include(path, e, depth)
            else:
                self.entries.append((path, e))

    def _include(self, path: str, e: sp.Include, depth: int) -> None:
        target = e.path.replace("%h", self.short_name) if "%h" in e.path else e.path
        if not target.startswith("/"):
            target = f"{path.rsplit('/', 1)[0] or '/'}/{target}"
        if e.directory:
            for n in sp.include_files(self.host.listdir(target)):
                if self.host.is_file(f"{target}/{n}"):
                    self.read(f"{target}/{n}", depth + 1)
        elif self.host.exists(target):
            self.read(target, depth + 1)
        else:
            self.problems.append(f"{path}:{e.line}: included {target} does not exist")


def matcher(aliases: Aliases, kind: str, atom: Callable[[str], bool | None]) -> ListMatch:
    """A list matcher: the last item that matches decides (``!`` negates); ``None`` when
    nothing matches.  ``atom`` answers for a plain item (``None``: does not match)."""

    def match(items: tuple[str, ...], seen: frozenset[str] = frozenset()) -> bool | None:
        result: bool | None = None
        for raw in items:
            item, neg = raw, False
            while item.startswith("!"):
                item, neg = item[1:].lstrip(), not neg
            if item == "ALL":
                hit: bool | None = True
            elif (kind, item) in aliases and item not in seen:
                hit = match(aliases[(kind, item)], seen | {item})
            else:
                hit = atom(item)
            if hit is None:
                continue
            result = (not hit) if neg else hit
        return result

    return match


def user_atom(user: pw.Account, db: pw.Database) -> Callable[[str], bool | None]:
    """Does a user-list item (name, ``#uid``, ``%group``, ``%#gid``) name ``user``?
    Netgroups (``+name``) cannot be resolved from files: they do not match.  Live (``db``
    asks NSS) the group names are those ``getgrgid`` gives the user's gids, as sudo's
    group list has them (directory groups included)."""
    gids = db.supplementary_gids(user)
    if db.nss is not None:
        names = {g.name for gid in sorted(gids) if (g := db.group_by_gid(gid)) is not None}
    else:
        names = {g.name for g in db.groups if g.gid in gids}

    def atom(item: str) -> bool | None:
        if item.startswith("%#"):
            return (item[2:].isdigit() and int(item[2:]) in gids) or None
        if item.startswith(("%:", "%")):
            return item.lstrip("%:") in names or None
        if item.startswith("#"):
            return (item[1:].isdigit() and int(item[1:]) == user.uid) or None
        if item.startswith("+"):
            return None
        return item == user.name or None

    return atom


def host_atom(name: str | None) -> Callable[[str], bool | None]:
    """Does a host-list item name this host?  An unknown host name, an IP address or a
    netgroup may match: assumed to."""

    def atom(item: str) -> bool | None:
        if name is None or not item[:1].isalpha():
            return True
        return item in (name, name.split(".")[0]) or None

    return atom


def _runas_atom(item: str) -> bool | None:
    return item in ("root", "#0") or None


def _cmnd_atom(item: str) -> bool | None:
    return None  # a named command is not "any command"


def sudo_any_command(pol: Policy, user: pw.Account, db: pw.Database,
                     host_name: str | None) -> Decision:
    """What sudo decides for an arbitrary command run as root by ``user``."""
    aliases: Aliases = {(e.kind, e.name): e.members for _, e in pol.entries
                        if isinstance(e, sp.Alias)}
    users = matcher(aliases, "user", user_atom(user, db))
    hosts = matcher(aliases, "host", host_atom(host_name))
    runas = matcher(aliases, "runas", _runas_atom)
    cmnds = matcher(aliases, "cmnd", _cmnd_atom)
    authenticate = True
    decision, spec_hit, file_hit, nopasswd = "none", None, None, False
    for path, e in pol.entries:
        if isinstance(e, sp.Default):
            authenticate = _authenticate(e, users, authenticate)
            continue
        if not isinstance(e, sp.UserSpec) or not users(e.users):
            continue
        for c in e.cmnds:
            if not hosts(c.hosts) or (c.runas_users is not None and not runas(c.runas_users)):
                continue
            hit = cmnds((("!" if c.negated else "") + c.command,))
            if hit is None:
                continue
            decision, spec_hit, file_hit = ("denied" if not hit else "allowed"), e, path
            nopasswd = "NOPASSWD" in c.tags
    if decision == "allowed":
        decision = "nopasswd" if (nopasswd or not authenticate) else "passwd"
    return Decision(decision, spec_hit, file_hit, not authenticate)


def _authenticate(e: sp.Default, users: ListMatch, current: bool) -> bool:
    """``authenticate`` after a ``Defaults`` line (global, ``@host`` or ``:user``
    bindings that apply to the user)."""
    if not (e.binding in ("", "@") or (e.binding == ":" and users(e.targets))):
        return current
    for s in e.settings:
        if s == "!authenticate":
            current = False
        elif s == "authenticate":
            current = True
    return current
