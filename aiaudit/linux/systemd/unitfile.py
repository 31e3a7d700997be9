"""systemd unit / configuration file syntax (systemd.syntax(7)).

``[Section]`` headers, ``Key=Value`` assignments, ``#`` and ``;`` comments at the start of a
line, a trailing backslash continues the line.  Files are merged in order (unit file, then
drop-ins); an empty assignment (``ExecStart=``) resets list-valued settings, and for single
values the last assignment wins.
"""

from __future__ import annotations

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record


@record
class Assignment:
    """One ``Key=Value`` line."""

    section: str
    key: str
    value: str
    file: str
    line: int


def parse(text: str, file: str = "") -> list[Assignment]:
    """All assignments of one file, in order.  Raises :class:`ParseError` on binary input."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=file)
    out: list[Assignment] = []
    section = ""
    pending = ""
    start = 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line[0] in "#;"):
            continue
        if pending and line and line[0] in "#;":
            continue  # comments inside a continuation are skipped (systemd >= 233)
        if line.endswith("\\"):
            if not pending:
                start = n
            pending += line[:-1] + " "
            continue
        if pending:
            line = pending + line
            pending = ""
        else:
            start = n
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue  # systemd warns "Missing '='" and ignores the line
        out.append(Assignment(section, key.strip(), value.strip(), file, start))
    return out


def last(assignments: list[Assignment], section: str, key: str) -> Assignment | None:
    """The effective single-valued setting: the last assignment (an empty value resets to
    the default, returned as an assignment with value ``""``)."""
    found = None
    for a in assignments:
        if a.section == section and a.key == key:
            found = a
    return found


def values(assignments: list[Assignment], section: str, key: str) -> list[Assignment]:
    """A list-valued setting (``ExecStart``, ``Environment``...): every assignment in order,
    an empty assignment clearing what came before."""
    out: list[Assignment] = []
    for a in assignments:
        if a.section == section and a.key == key:
            if a.value == "":
                out = []
            else:
                out.append(a)
    return out
