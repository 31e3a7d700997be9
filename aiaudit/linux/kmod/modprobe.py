"""modprobe.d(5) and modules-load.d(5) files.

modprobe.d: one command per line (``blacklist NAME``, ``install NAME CMD...``,
``options NAME ...``, ``softdep NAME pre: ... post: ...``, ``alias``), ``#`` comments, a
trailing backslash continues the line (kmod ``libkmod-config.c``: ``kmod_config_parse``).
modules-load.d: one module name per line, ``#`` and ``;`` comments.  In module names ``-``
and ``_`` are the same (kmod ``modname_normalize``).
"""

from __future__ import annotations

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record


@record
class Command:
    """One modprobe.d command."""

    command: str
    args: tuple[str, ...]
    file: str
    line: int


def norm(name: str) -> str:
    """A module name as kmod compares it (``-`` -> ``_``)."""
    return name.replace("-", "_")


def parse_modprobe(text: str, file: str = "") -> list[Command]:
    """The commands of one modprobe.d file, in order."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=file)
    out: list[Command] = []
    pending = ""
    start = 0
    for n, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = n
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if not line or line.startswith("#"):
            continue
        words = line.split()
        out.append(Command(words[0], tuple(words[1:]), file, start))
    return out


def parse_modules_load(text: str, file: str = "") -> list[tuple[str, int]]:
    """``(module, line)`` of a modules-load.d file (or Debian's ``/etc/modules``)."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=file)
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        out.append((line.split()[0], n))
    return out
