"""dpkg status database (``/var/lib/dpkg/status``): installed package versions.

Format: deb822 stanzas separated by blank lines; ``Package``, ``Status``, ``Version``...
(dpkg(1), deb-control(5)).  Continuation lines start with a space and are ignored here.
"""

from __future__ import annotations

import re

from aiaudit.errors import ParseError
from aiaudit.parsers import MAX_INT_DIGITS


def split_stanzas(text: str) -> list[str]:
    """The stanzas of a status file (separated by blank or whitespace-only lines)."""
    if "\x00" in text:
        raise ParseError("binary content in dpkg status")
    return re.split(r"\n\s*\n", text)


def parse_stanzas(stanzas: list[str], hints: tuple[str, ...] = ()
                  ) -> dict[str, dict[str, str]]:
    """Installed packages of :func:`split_stanzas` output: ``{name: {field: value}}``.

    ``hints``: parse only the stanzas that contain one of these strings.  A package whose
    name contains a hint is found exactly as without hints (all its stanzas contain its
    name); others may be missing.  A scan asks for a handful of packages, and parsing every
    line of a 700-package database is most of the cost."""
    if hints:
        # a stanza that contains "libnvidia" contains "nvidia": one pass less
        hints = tuple(h for h in hints if not any(o != h and o in h for o in hints))
        keep = {i for h in hints for i, s in enumerate(stanzas) if h in s}
        stanzas = [stanzas[i] for i in sorted(keep)]
    out: dict[str, dict[str, str]] = {}
    for stanza in stanzas:
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if not line or line[0] in " \t#":
                continue
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        name = fields.get("Package")
        if not name or not fields.get("Status", "").endswith(" installed"):
            continue
        out.setdefault(name, fields)
    return out


def parse_status(text: str, hints: tuple[str, ...] = ()) -> dict[str, dict[str, str]]:
    """Installed packages: ``{name: {field: value}}``.  Only stanzas whose ``Status`` ends
    in ``installed`` count; for multi-arch duplicates the first wins.  ``hints``: see
    :func:`parse_stanzas`."""
    return parse_stanzas(split_stanzas(text), hints)


def upstream_version(version: str) -> str:
    """Upstream part of a Debian version: drop the ``epoch:`` and the ``-revision``.

    >>> upstream_version("2:4.0.2-3")
    '4.0.2'
    """
    v = version.split(":", 1)[1] if ":" in version else version
    if "-" in v:
        v = v.rsplit("-", 1)[0]
    return v


def version_tuple(version: str) -> tuple[int, ...]:
    """Leading numeric components of a version (``4.0.2`` -> ``(4, 0, 2)``), for
    coarse comparisons; stops at the first non-numeric component."""
    out = []
    for part in re.split(r"[.+~-]", version):
        m = re.match(r"\d+", part)
        if not m:
            break
        if len(m.group()) > MAX_INT_DIGITS:
            break  # not a version anything installs: compare what came before
        out.append(int(m.group()))
        if m.end() != len(part):
            break
    return tuple(out)
