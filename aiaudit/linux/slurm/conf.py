"""``slurm.conf`` (slurm.conf(5)): ``Key=Value`` pairs, several per line, keys
case-insensitive, ``#`` starts a comment, a trailing backslash continues the line, and
``Include FILE`` pulls in another file (handled by the caller).  Only the settings the limit
checks need are interpreted here.
"""

from __future__ import annotations

import re

from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

RLIMIT_NAMES = ("AS", "CORE", "CPU", "DATA", "FSIZE", "MEMLOCK", "NOFILE", "NPROC", "RSS",
                "STACK")
"""Limits ``PropagateResourceLimits`` knows (slurm.conf(5))."""


@record
class Setting:
    """One ``Key=Value`` pair."""

    key: str
    """Key as written."""
    value: str
    file: str
    line: int


_SETTING = lazy_pattern(r'(?<![A-Za-z0-9_])[0-9_]*([A-Za-z][A-Za-z0-9_]*)=("[^"]*"|\S*)')
"""``Key=Value``: the key is the first letter onwards of a run of word characters that ends
in ``=``.  A match may start only where such a run starts (the lookbehind), so a long run
without ``=`` is scanned once, not once per character (a 64 KiB line took minutes); the
matches are those of the plain ``([A-Za-z][A-Za-z0-9_]*)=...`` (``SETTING_PLAIN``, tested
as the oracle)."""

SETTING_PLAIN = r'([A-Za-z][A-Za-z0-9_]*)=("[^"]*"|\S*)'


def parse(text: str, file: str = "") -> tuple[list[Setting], list[tuple[int, str]]]:
    """(settings in order, ``Include`` lines as (line, pattern))."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=file)
    out: list[Setting] = []
    includes: list[tuple[int, str]] = []
    pending, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = n
        line = raw.split("#", 1)[0].rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if not line:
            continue
        m = re.match(r"(?i)include\s+(\S.*)$", line)
        if m:
            includes.append((start, m.group(1).strip()))
            continue
        for km in _SETTING().finditer(line):
            out.append(Setting(km.group(1), km.group(2).strip('"'), file, start))
    return out, includes


def propagated(prop: str | None, except_: str | None) -> tuple[set[str], str | None]:
    """Limits propagated from the submitting shell: (names, problem).

    ``PropagateResourceLimits`` defaults to ``ALL``; ``NONE`` propagates nothing;
    ``PropagateResourceLimitsExcept`` propagates all but the listed ones.  Only one of the
    two may be set (slurm.conf(5))."""
    if prop is not None and except_ is not None:
        return set(), "both PropagateResourceLimits and PropagateResourceLimitsExcept are set"
    if except_ is not None:
        names = {v.strip().upper() for v in except_.split(",") if v.strip()}
        bad = names - set(RLIMIT_NAMES) - {"NONE", "ALL"}
        if bad:
            return set(), f"unknown limit name(s) in PropagateResourceLimitsExcept: {sorted(bad)}"
        if "ALL" in names:
            return set(), None
        return set(RLIMIT_NAMES) - names, None
    if prop is None:
        return set(RLIMIT_NAMES), None
    names = {v.strip().upper() for v in prop.split(",") if v.strip()}
    bad = names - set(RLIMIT_NAMES) - {"NONE", "ALL"}
    if bad:
        return set(), f"unknown limit name(s) in PropagateResourceLimits: {sorted(bad)}"
    if "NONE" in names:
        return set(), None
    if "ALL" in names:
        return set(RLIMIT_NAMES), None
    return names, None
