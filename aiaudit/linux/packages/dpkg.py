"""dpkg status database (``/var/lib/dpkg/status``): installed package versions.

Format: deb822 stanzas separated by blank lines; ``Package``, ``Status``, ``Version``...
(dpkg(1), deb-control(5)).  Continuation lines start with a space and are ignored here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from aiaudit.core.errors import ParseError
from aiaudit.core.parsing import MAX_INT_DIGITS

if TYPE_CHECKING:
    from debian.debian_support import Version


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
        fields = _fields(stanza)
        name = fields.get("Package")
        if not name or not fields.get("Status", "").endswith(" installed"):
            continue
        out.setdefault(name, fields)
    return out


def _fields(stanza: str) -> dict[str, str]:
    """The fields of one stanza (a later line wins; continuation and comment lines are
    skipped)."""
    fields: dict[str, str] = {}
    for line in stanza.splitlines():
        if not line or line[0] in " \t#":
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def stanzas_containing(text: str, hints: tuple[str, ...], max_hits: int | None = None
                       ) -> list[str] | None:
    """``[s for s in split_stanzas(text) if any(h in s for h in hints)]``, found around
    each occurrence of a hint instead of splitting the whole database: a lookup of a few
    packages before anything needs every stanza (a Slurm prolog's two) costs microseconds
    instead of the 15 M instructions of the split.

    A stanza ends where :func:`split_stanzas`'s separator begins: at the line feed that
    ends a line followed by a whitespace-only (or empty) line that itself ends in a line
    feed; it starts after the last such line before it (the first line of the text is never
    part of a separator: no line feed precedes it).  A hint with whitespace could span a
    separator: those, and the empty hint, take the full split.

    ``text`` must hold no NUL (which :func:`split_stanzas` refuses): the caller checks it
    once, not once per lookup (the check scans the whole text).  ``None`` when the hints
    occur more than ``max_hits`` times (walking out from each would cost more than a split
    shared by every lookup)."""
    if not hints or any(not h or any(c.isspace() for c in h) for h in hints):
        return [st for st in split_stanzas(text) if any(h in st for h in hints)]
    found: dict[int, str] = {}
    hits = 0
    for h in hints:
        pos = text.find(h)
        while pos >= 0:
            hits += 1
            if max_hits is not None and hits > max_hits:
                return None
            start, stop = _stanza_start(text, pos), _stanza_stop(text, pos)
            found.setdefault(start, text[start:stop])
            pos = text.find(h, stop)
    return [found[k] for k in sorted(found)]


def _stanza_start(text: str, pos: int) -> int:
    """Where the stanza around ``pos`` (not on a blank line) starts: after the last
    separator line before it (a blank line after a line feed), or at 0."""
    start = text.rfind("\n", 0, pos) + 1  # the line of the hit: not blank
    while start > 0:
        prev = text.rfind("\n", 0, start - 1) + 1
        if prev > 0 and not text[prev:start - 1].strip():
            break  # a blank line after a line feed: the separator ends here
        start = prev
    return start


def _stanza_stop(text: str, pos: int) -> int:
    """Where the stanza around ``pos`` ends: at the line feed before the next blank line
    that ends in a line feed, or at the end of ``text``."""
    end = text.find("\n", pos)
    while end >= 0:
        nxt = text.find("\n", end + 1)
        if nxt >= 0 and not text[end + 1:nxt].strip():
            break  # a blank line ending in a line feed: the separator starts here
        end = nxt
    return len(text) if end < 0 else end


def index_stanzas(stanzas: list[str]) -> tuple[dict[str, list[int]], list[int]]:
    """Where each package's stanzas are, so that a scan asking for a few packages parses
    only theirs without searching every stanza for every name: ``(by_name, nameless)``.

    ``by_name[n]``: indices of the stanzas that :func:`parse_stanzas` reads as package
    ``n``.  Most are named by their first line (``Package:n``, printable, so one line for
    ``splitlines``, and ``Package`` occurs nowhere else in it, so no other line can name a
    package); the few others (a description that says "Package") are parsed once here.
    ``nameless``: stanzas without a ``Package`` field, which no lookup can find.
    One pass over the database instead of one per name asked (with 863 packages, the ten
    lookups of a scan searched 7.8 MB); for a rule that looks up many packages."""
    by_name: dict[str, list[int]] = {}
    nameless: list[int] = []
    for i, stanza in enumerate(stanzas):
        end = stanza.find("\n")
        first = stanza[:end] if end >= 0 else stanza
        if (first.startswith("Package:") and first.isprintable()
                and stanza.count("Package") == 1):
            name: str | None = first[8:].strip()
        else:
            name = _fields(stanza).get("Package")
        if name:
            by_name.setdefault(name, []).append(i)
        else:
            nameless.append(i)
    return by_name, nameless


def select_stanzas(stanzas: list[str], index: tuple[dict[str, list[int]], list[int]],
                   names: tuple[str, ...] = (), prefixes: tuple[str, ...] = ()) -> list[str]:
    """The stanzas, in database order, that describe a package named one of ``names`` or
    starting with one of ``prefixes`` (``index`` from :func:`index_stanzas`): parsing them
    with :func:`parse_stanzas` finds those packages exactly as parsing everything."""
    by_name = index[0]
    keep = [i for n in names for i in by_name.get(n, ())]
    if prefixes:
        keep += [i for n, idx in by_name.items() if n.startswith(prefixes) for i in idx]
    return [stanzas[i] for i in sorted(set(keep))]


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


def version_key(v: str) -> Version:
    """A sort key ordering Debian versions as dpkg does (python-debian, imported on first
    use); a string that is no Debian version raises :class:`ValueError`."""
    from debian.debian_support import Version

    return Version(v)
