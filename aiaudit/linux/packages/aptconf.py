"""apt.conf(5) syntax: ``A::B "value";`` and scoped ``A { B "value"; };`` assignments.

Comments are ``//`` and ``#`` to the end of the line (but ``#clear`` / ``#include`` are
directives) and ``/* ... */``; keys are case-insensitive; a value is a double-quoted string
(or a bare word); inside a scope, an item without a key is a list element.  Scalars: the
last assignment wins (apt-pkg/contrib/configuration.cc ``ReadConfigFile``).

The effective configuration of a root (:func:`load`): the files of ``/etc/apt/apt.conf.d``
in lexical order, then ``/etc/apt/apt.conf``, as apt-pkg ``pkgInitConfig`` reads them; and
whether an ``APT::Periodic`` interval is on (:func:`periodic_on`, apt's
``apt.systemd.daily``).
"""

from __future__ import annotations

import re

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

_TOKEN = lazy_pattern(r'\s+|//[^\n]*|/\*.*?\*/|#(?!clear\b|include\b)[^\n]*|"[^"\n]*"|[{};]|'
                    r'#clear|#include|[^\s{};"]+', re.S)
MAX_DEPTH = 64


def parse(text: str, source: str = "") -> dict[str, tuple[str, int]]:
    """``{lower-case full key: (value, line)}`` for every scalar assignment (last wins);
    ``#clear KEY`` removes a key and its subtree."""
    return apply(parse_ops(text, source), {})


def apply(ops: list[tuple[str, str | None, int]], into: dict[str, tuple[str, int]]
          ) -> dict[str, tuple[str, int]]:
    """Apply :func:`parse_ops` output to ``into`` (a later file continues an earlier
    one's configuration: a ``#clear`` also removes what earlier files set)."""
    for key, value, line in ops:
        if value is None:
            for k in [k for k in into if k == key or k.startswith(key + "::")]:
                del into[k]
        else:
            into[key] = (value, line)
    return into


def parse_ops(text: str, source: str = "") -> list[tuple[str, str | None, int]]:
    """The assignments (``(key, value, line)``) and clears (``(key, None, line)``) of one
    file, in order; keys in lower case."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=source)
    out: list[tuple[str, str | None, int]] = []
    scope: list[str] = []
    pending: list[tuple[str, int]] = []
    line = 1
    pos = 0
    while pos < len(text):
        m = _TOKEN().match(text, pos)
        if m is None:
            raise ParseError("unterminated string or comment", line=line, source=source)
        tok = m.group(0)
        pos = m.end()
        start = line
        line += tok.count("\n")
        if _ignored(tok):
            continue
        if tok in ("{", "}"):
            _scope(tok, scope, pending, start, source)
            pending = []
        elif tok == ";":
            op = _statement(scope, pending)
            if op is not None:
                out.append(op)
            pending = []
        else:
            pending.append((tok[1:-1] if tok.startswith('"') else tok, start))
    if scope:
        raise ParseError("unclosed '{'", line=line, source=source)
    return out


def _ignored(tok: str) -> bool:
    """Whitespace and comments (``#`` that is not ``#clear`` or ``#include``)."""
    return tok[0].isspace() or tok.startswith(("//", "/*")) or (
        tok.startswith("#") and tok not in ("#clear", "#include"))


def _scope(tok: str, scope: list[str], pending: list[tuple[str, int]], line: int,
           source: str) -> None:
    """Open (``{``: named by the word before it, or an anonymous list scope) or close
    (``}``) a scope of ``scope``."""
    if tok == "{":
        scope.append(pending[0][0] if pending else "")
        if len(scope) > MAX_DEPTH:
            raise ParseError("scopes nested too deeply", line=line, source=source)
        return
    if not scope:
        raise ParseError("'}' without '{'", line=line, source=source)
    scope.pop()


def _statement(scope: list[str], pending: list[tuple[str, int]]
               ) -> tuple[str, str | None, int] | None:
    """The operation the words ``pending`` before a ``;`` make in ``scope``: a clear
    (``#clear KEY``), an assignment (``KEY VALUE``) or nothing (a list element, an
    ``#include``)."""
    if pending and pending[0][0] == "#clear" and len(pending) > 1:
        gone = "::".join(filter(None, [*scope, pending[1][0]])).lower()
        return gone, None, pending[0][1]
    if len(pending) >= 2 and pending[0][0] != "#include":
        key = "::".join(filter(None, [*scope, pending[0][0]])).lower()
        return key, pending[1][0], pending[0][1]
    return None


# ------------------------------------------------------------------ apt's configuration files
APT_CONF_D = "/etc/apt/apt.conf.d"
APT_CONF = "/etc/apt/apt.conf"
IGNORED_SUFFIXES = ("~", ".disabled", ".bak", ".save", ".orig", ".distUpgrade")
"""apt.conf.d names apt skips (apt-pkg ``Dir::Ignore-Files-Silently``)."""


def config_files(host: Host) -> list[str]:
    """The files apt reads, in order: apt.conf.d's in lexical order (names of letters,
    digits, ``_-.`` without a dot or ending in ``.conf``, none with an ignored suffix),
    then apt.conf (apt-pkg ``pkgInitConfig``, ``ReadConfigDir``)."""
    files = [f"{APT_CONF_D}/{n}" for n in host.listdir(APT_CONF_D)
             if not n.endswith(IGNORED_SUFFIXES) and ("." not in n or n.endswith(".conf"))
             and all(c.isalnum() or c in "_-." for c in n)]
    if host.is_file(APT_CONF):
        files.append(APT_CONF)
    return files


@record
class AptConfig:
    """apt's effective scalar configuration, as :func:`load` reads it."""

    values: dict[str, tuple[str, int, str]]
    """``{lower-case key: (value, line, file)}``: the last assignment of every key."""
    problems: tuple[str, ...]
    """Why files could not be read (each skipped)."""
    bad: tuple[str, ...]
    """The files the problems are in."""


def load(host: Host) -> AptConfig:
    """The effective apt.conf scalars of :func:`config_files` (last value wins; a
    ``#clear`` also removes what earlier files set)."""
    problems: list[str] = []
    bad: list[str] = []
    merged: dict[str, tuple[str, int]] = {}
    where: dict[str, str] = {}
    for path in config_files(host):
        try:
            ops = parse_ops(host.read_text(path), path)
        except (HostError, ParseError) as exc:
            problems.append(str(exc))
            bad.append(path)
            continue
        apply(ops, merged)
        for k, v, _ in ops:
            if v is not None:
                where[k] = path
    values = {k: (v, ln, where[k]) for k, (v, ln) in merged.items()}
    return AptConfig(values, tuple(problems), tuple(bad))


def apt_config(host: Host) -> tuple[dict[str, tuple[str, int, str]], list[str]]:
    """Effective apt.conf scalars: ``{key: (value, line, file)}`` and problems."""
    cfg = load(host)
    return cfg.values, list(cfg.problems)


def periodic_on(value: str) -> bool:
    """Whether an ``APT::Periodic`` interval turns its job on: ``always``, a positive
    number of days, or a positive number with an ``h``/``d`` unit (apt's
    ``apt.systemd.daily``)."""
    v = value.strip().lower()
    return v == "always" or (v.isdigit() and int(v) > 0) or (v.endswith(("d", "h")) and
                                                            v[:-1].isdigit() and int(v[:-1]) > 0)
