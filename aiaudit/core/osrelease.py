# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""``os-release(5)`` parser: shell-style ``KEY=value`` lines, quotes and escapes."""

from __future__ import annotations

import re

_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        if value[0] == '"':
            inner = re.sub(r'\\([\\$"`])', r"\1", inner)
        return inner
    return value


def parse_os_release(text: str) -> dict[str, str]:
    """Fields of an os-release file; lines that are not assignments are ignored (as
    systemd and the ``distro`` library do)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m:
            out[m.group(1)] = _unquote(m.group(2))
    return out
