"""``/etc/fstab``, ``/proc/mounts`` and ``/proc/swaps``.

Sources: fstab(5) (six whitespace-separated fields, ``#`` comments, ``\\040``-style octal
escapes in the first two fields), proc(5) ``/proc/mounts`` (same format, the kernel escapes
space, tab, newline and backslash), ``mm/swapfile.c swap_show`` (``/proc/swaps``: a header
line, then ``Filename Type Size Used Priority``).
"""

from __future__ import annotations

import re

from aiaudit.core.errors import ParseError
from aiaudit.core.parsing import to_int
from aiaudit.core.startup.records import record

_OCTAL = re.compile(r"\\([0-7]{3})")


def unescape(field: str) -> str:
    """Undo ``\\040``-style octal escapes."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


@record
class Mount:
    """One fstab / mounts line."""

    spec: str
    target: str
    fstype: str
    options: tuple[str, ...]
    line: int
    raw: str

    def option(self, name: str) -> str | None:
        """Value of ``name=value`` (the last one wins), ``""`` for a bare flag, else None."""
        found = None
        for o in self.options:
            k, eq, v = o.partition("=")
            if k == name:
                found = v if eq else ""
        return found


def parse(text: str) -> list[Mount]:
    """Entries of an fstab or ``/proc/mounts`` text.  Lines with fewer than three fields
    are skipped (mount(8) warns about them); raises :class:`ParseError` on binary data."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)")
    out: list[Mount] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        f = line.split()
        if len(f) < 3:
            continue
        opts = tuple(o for o in (f[3] if len(f) > 3 else "defaults").split(",") if o)
        out.append(Mount(unescape(f[0]), unescape(f[1]), f[2], opts, n, raw))
    return out


@record
class Swap:
    """An active swap area."""

    filename: str
    type: str
    size_kb: int


def parse_swaps(text: str) -> list[Swap]:
    """Active swap areas from ``/proc/swaps`` (header skipped)."""
    out = []
    for raw in text.splitlines()[1:]:
        f = raw.split()
        if len(f) < 3:
            continue
        try:
            size = int(f[2])
        except ValueError:
            raise ParseError(f"bad size in /proc/swaps line {raw!r}") from None
        out.append(Swap(unescape(f[0]), f[1], size))
    return out


def meminfo_total_kb(text: str) -> int | None:
    """``MemTotal`` from ``/proc/meminfo`` in kB, or ``None``."""
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.startswith("MemTotal:"):
            f = raw.split()
            if len(f) >= 2 and f[1].isdigit():
                return to_int(f[1], what="MemTotal", source="/proc/meminfo", line=n)
    return None
