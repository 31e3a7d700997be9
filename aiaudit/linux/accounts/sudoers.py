"""sudoers(5): the entries of one file, for deciding what a user may run without a password.

Lines (sudoers(5), "SUDOERS FILE FORMAT"; sudo's ``plugins/sudoers/toke.l`` / ``gram.y``):

- a trailing backslash continues a line; ``#`` starts a comment except in ``#include``,
  ``#includedir`` and a ``#<uid>`` user; ``@include`` / ``@includedir`` (sudo >= 1.9.1) are
  the same as the ``#`` forms;
- ``User_Alias``, ``Runas_Alias``, ``Host_Alias``, ``Cmnd_Alias`` (also ``Cmd_Alias``):
  ``NAME = item, item : NAME2 = ...``;
- ``Defaults``, ``Defaults:users``, ``Defaults@hosts``, ``Defaults!cmnds``,
  ``Defaults>runas`` followed by a comma-separated list of settings (``!authenticate``);
- a user specification: ``User_List Host_List = Cmnd_Spec_List (: Host_List = ...)*``, where
  each ``Cmnd_Spec`` is ``[(Runas)] [Option=value...] [TAG: ...] [!]command`` and the runas
  list and tags carry over to later commands of the same list until changed.

``\\`` escapes a special character (``, : = \\``) in a command.  Anything the grammar does
not allow raises :class:`ParseError` with the line, as visudo would refuse the file.
"""

from __future__ import annotations

import re

from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

TAGS = frozenset({"NOPASSWD", "PASSWD", "NOEXEC", "EXEC", "SETENV", "NOSETENV", "LOG_INPUT",
                  "NOLOG_INPUT", "LOG_OUTPUT", "NOLOG_OUTPUT", "MAIL", "NOMAIL", "FOLLOW",
                  "NOFOLLOW", "INTERCEPT", "NOINTERCEPT"})
OPTIONS = frozenset({"ROLE", "TYPE", "CWD", "CHROOT", "TIMEOUT", "NOTBEFORE", "NOTAFTER",
                     "APPARMOR_PROFILE", "PRIVS", "LIMITPRIVS"})
DIGESTS = frozenset({"sha224", "sha256", "sha384", "sha512"})
ALIAS_KINDS = {"User_Alias": "user", "Runas_Alias": "runas", "Host_Alias": "host",
               "Cmnd_Alias": "cmnd", "Cmd_Alias": "cmnd"}
MAX_LINE = 64 * 1024


@record
class Include:
    """``@include`` / ``#includedir`` line."""

    path: str
    directory: bool
    line: int


@record
class Alias:
    """One alias definition."""

    kind: str
    """``user``, ``runas``, ``host`` or ``cmnd``."""
    name: str
    members: tuple[str, ...]
    line: int


@record
class Default:
    """A ``Defaults`` line: binding and settings."""

    binding: str
    """``""`` (global), ``:``, ``@``, ``!`` or ``>``."""
    targets: tuple[str, ...]
    settings: tuple[str, ...]
    line: int


@record
class Cmnd:
    """One command of a user specification, with the runas list and tags in force."""

    hosts: tuple[str, ...]
    runas_users: tuple[str, ...] | None
    """``None`` when no ``(...)`` was given (only root, sudoers(5))."""
    tags: tuple[str, ...]
    command: str
    negated: bool


@record
class UserSpec:
    """One user specification line."""

    users: tuple[str, ...]
    cmnds: tuple[Cmnd, ...]
    line: int
    text: str


Entry = Include | Alias | Default | UserSpec


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        if len(raw) > MAX_LINE:
            raise ParseError(f"line longer than {MAX_LINE} bytes", line=n)
        if not buf:
            start = n
        if raw.endswith("\\") and not raw.endswith("\\\\"):
            buf += raw[:-1] + " "
            continue
        out.append((start, buf + raw))
        buf = ""
    if buf:
        out.append((start, buf))
    return out


def _strip_comment(line: str) -> str:
    """Drop a ``#`` comment (not ``#<digits>`` uids, not escaped, not in quotes)."""
    quoted = False
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "#" and not quoted and not (i + 1 < len(line) and line[i + 1].isdigit()):
            return line[:i]
        i += 1
    return line


def _split_top(text: str, sep: str, keep_tags: bool = False) -> list[str]:
    """Split at unescaped, unquoted ``sep`` outside parentheses; with ``keep_tags`` a ``:``
    that ends a tag (``NOPASSWD:``) or digest name (``sha256:``) does not split."""
    parts, buf, depth, quoted, i = [], "", 0, False, 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            buf += text[i:i + 2]
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif not quoted and c == "(":
            depth += 1
        elif not quoted and c == ")":
            depth = max(0, depth - 1)
        elif not quoted and depth == 0 and c == sep and not (
                keep_tags and _ends_with_tag(buf)):
            parts.append(buf)
            buf = ""
            i += 1
            continue
        buf += c
        i += 1
    parts.append(buf)
    return parts


def _ends_with_tag(buf: str) -> bool:
    m = re.search(r"([A-Za-z_0-9]+)\s*$", buf[-64:])
    return m is not None and (m.group(1) in TAGS or m.group(1) in DIGESTS)


def _items(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in _split_top(text, ",") if x.strip())


_ALIAS_NAME = lazy_pattern(r"[A-Z][A-Z0-9_]*")
_LEAD = lazy_pattern(r"\s*([^\s,=]+(?:\s*,\s*[^\s,=]+)*)\s+")


def _cmnd_specs(hosts: tuple[str, ...], text: str, n: int) -> list[Cmnd]:
    out: list[Cmnd] = []
    runas: tuple[str, ...] | None = None
    tags: dict[str, str] = {}
    for raw in _split_top(text, ","):
        s = raw.strip()
        if not s:
            raise ParseError("empty command in a command list", line=n)
        if s.startswith("("):
            close = s.find(")")
            if close < 0:
                raise ParseError("unclosed runas list", line=n)
            users = s[1:close].split(":", 1)[0]
            runas = _items(users) or ()
            s = s[close + 1:].strip()
        while True:
            m = re.match(r"([A-Z_]+)\s*=\s*(\"[^\"]*\"|\S+)\s*", s)
            if m and m.group(1) in OPTIONS:
                s = s[m.end():]
                continue
            m = re.match(r"([A-Z_]+)\s*:\s*", s)
            if m and m.group(1) in TAGS:
                tag = m.group(1)
                base = tag[2:] if tag.startswith("NO") and tag[2:] in TAGS else tag
                tags[base] = tag
                s = s[m.end():]
                continue
            m = re.match(r"(sha224|sha256|sha384|sha512)\s*:\s*\S+\s+", s)
            if m:
                s = s[m.end():]
                continue
            break
        neg = False
        while s.startswith("!"):
            neg = not neg
            s = s[1:].lstrip()
        if not s:
            raise ParseError("missing command", line=n)
        out.append(Cmnd(hosts, runas, tuple(sorted(tags.values())), s, neg))
    return out


def parse(text: str, source: str = "") -> list[Entry]:
    """Every entry of one sudoers file, in order."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=source)
    out: list[Entry] = []
    for n, raw in _logical_lines(text):
        inc = _include(raw.strip(), n)
        if inc is not None:
            out.append(inc)
            continue
        line = _strip_comment(raw).strip()
        if not line:
            continue
        word = line.split(None, 1)[0]
        if word in ALIAS_KINDS:
            out += _aliases(word, line[len(word):], n, source)
            continue
        m = re.match(r"Defaults(?:([:@!>])\s*(\S+))?(?:\s+(.*))?$", line)
        if m and (line == "Defaults" or line[8:9] in ":@!> \t"):
            targets = _items(m.group(2) or "")
            out.append(Default(m.group(1) or "", targets, _items(m.group(3) or ""), n))
            continue
        out.append(_user_spec(line, n, source))
    return out


def _include(stripped: str, n: int) -> Include | None:
    """An ``@include``/``#includedir`` line (quotes and ``\\ `` escapes removed)."""
    m = re.match(r"[#@](include(?:dir)?)\s+(.+)$", stripped)
    if not m:
        return None
    path = m.group(2).strip()
    if path.startswith('"') and path.endswith('"') and len(path) > 1:
        path = path[1:-1]
    return Include(path.replace("\\ ", " "), m.group(1) == "includedir", n)


def _aliases(word: str, rest: str, n: int, source: str) -> list[Alias]:
    """The definitions of one ``*_Alias`` line (``NAME = items : NAME2 = ...``)."""
    out: list[Alias] = []
    for part in _split_top(rest, ":"):
        name, eq, members = part.partition("=")
        name = name.strip()
        if not eq or not _ALIAS_NAME().fullmatch(name):
            raise ParseError(f"bad {word} definition {part.strip()[:60]!r}", line=n,
                             source=source)
        out.append(Alias(ALIAS_KINDS[word], name, _items(members), n))
    return out


def _user_spec(line: str, n: int, source: str) -> UserSpec:
    """A user specification: ``User_List Host_List = Cmnd_Spec_List (: ...)*``."""
    m = _LEAD().match(line)
    if not m:
        raise ParseError(f"not a sudoers entry: {line[:60]!r}", line=n, source=source)
    users = _items(m.group(1))
    cmnds: list[Cmnd] = []
    for part in _split_top(line[m.end():], ":", keep_tags=True):
        if "=" not in part:
            if cmnds:  # a ':' inside a command must be escaped; treat as part of it
                raise ParseError(f"unescaped ':' in {part.strip()[:60]!r}", line=n,
                                 source=source)
            raise ParseError(f"no '=' in user specification {line[:60]!r}", line=n,
                             source=source)
        hosts_txt, _, spec = part.partition("=")
        hosts = _items(hosts_txt)
        if not hosts:
            raise ParseError("missing host list", line=n, source=source)
        cmnds += _cmnd_specs(hosts, spec, n)
    return UserSpec(users, tuple(cmnds), n, line)


def include_files(names: list[str]) -> list[str]:
    """Names ``#includedir`` reads, in order: no ``.`` in the name, not ending in ``~``
    (sudoers(5), "Including other files from within sudoers")."""
    return sorted(n for n in names if "." not in n and not n.endswith("~"))
