"""``apptainer.conf`` / ``singularity.conf``: ``key = value`` lines, ``#`` comments.

Apptainer's ``internal/pkg/runtime/engine/config`` parser: key names are case-sensitive,
spaces around ``=`` are optional, for a single-valued directive the last line wins, and
unknown keys are an error at start-up; booleans are ``yes``/``no``.
"""

from __future__ import annotations

from aiaudit.core.errors import ParseError


def parse(text: str, source: str = "") -> dict[str, tuple[str, int]]:
    """``{key: (value, line)}`` with the last occurrence of each key."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=source)
    out: dict[str, tuple[str, int]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        if not eq:
            raise ParseError(f"no '=' in {line[:60]!r}", line=n, source=source)
        out[key.strip()] = (value.strip(), n)
    return out
