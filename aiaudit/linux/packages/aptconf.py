"""apt.conf(5) syntax: ``A::B "value";`` and scoped ``A { B "value"; };`` assignments.

Comments are ``//`` and ``#`` to the end of the line (but ``#clear`` / ``#include`` are
directives) and ``/* ... */``; keys are case-insensitive; a value is a double-quoted string
(or a bare word); inside a scope, an item without a key is a list element.  Scalars: the
last assignment wins (apt-pkg/contrib/configuration.cc ``ReadConfigFile``).
"""

from __future__ import annotations

import re

from aiaudit.core.errors import ParseError
from aiaudit.core.parsing import lazy_pattern

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
        if tok[0].isspace() or tok.startswith(("//", "/*")) or (
                tok.startswith("#") and tok not in ("#clear", "#include")):
            continue
        if tok == "{":
            if not pending:
                scope.append("")  # anonymous list scope
            else:
                scope.append(pending[0][0])
            pending = []
            if len(scope) > MAX_DEPTH:
                raise ParseError("scopes nested too deeply", line=start, source=source)
            continue
        if tok == "}":
            if not scope:
                raise ParseError("'}' without '{'", line=start, source=source)
            scope.pop()
            pending = []
            continue
        if tok == ";":
            if pending and pending[0][0] == "#clear" and len(pending) > 1:
                gone = "::".join(filter(None, [*scope, pending[1][0]])).lower()
                out.append((gone, None, pending[0][1]))
            elif len(pending) >= 2 and pending[0][0] != "#include":
                key = "::".join(filter(None, [*scope, pending[0][0]])).lower()
                out.append((key, pending[1][0], pending[0][1]))
            pending = []
            continue
        value = tok[1:-1] if tok.startswith('"') else tok
        pending.append((value, start))
    if scope:
        raise ParseError("unclosed '{'", line=line, source=source)
    return out
