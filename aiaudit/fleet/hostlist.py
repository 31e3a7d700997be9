"""Compressed host lists as Slurm and ClusterShell write them: ``gpu[001-032,040],login1``.

:func:`fold` turns host names into one such string and :func:`expand` turns it back
(``expand(fold(names)) == sorted(set(names))`` for every valid host name, a property test).

The format, as Slurm's ``hostlist.c`` reads it (``scontrol show hostnames``): comma
separated items, each a prefix, an optional ``[ranges]`` and a suffix; ``ranges`` are comma
separated numbers or ``lo-hi`` ranges, zero padded to the width of ``lo``.  Like Slurm, names
are folded on their trailing digits only (``node1-ib`` stays whole), so every string this
module writes is read back the same by Slurm, ClusterShell's ``nodeset -e`` and
:func:`expand`.  A number with a leading zero keeps its width (``gpu007``); one without is
written as it is (``gpu[8-12]`` is gpu8 ... gpu12).
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

HOSTNAME = re.compile(r"^[A-Za-z0-9_.:-]{1,253}$")
"""Host names a report may carry and a host list can hold (RFC 1123 letters, digits,
hyphen and dot; underscore and colon as some sites use them); no bracket or comma."""

_TRAILING = re.compile(r"^(.*?)(\d{1,18})$")
MAX_EXPAND = 1_000_000
"""Most names :func:`expand` produces: a hostile ``n[0-999999999999]`` is refused."""


class HostlistError(ValueError):
    """A host list that cannot be read (bad bracket, reversed or too large a range)."""


class Budget:
    """How many more names expansions may produce, shared by several lists (the host
    lists of one ``--since`` report together): a range is checked against it before a
    single name of it is made."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def take(self, n: int) -> None:
        """Spend ``n`` names; :class:`HostlistError` when there are not as many left."""
        if n > self.left:
            raise HostlistError(f"more than {self.limit:,} names")
        self.left -= n


def _split(name: str) -> tuple[str, str | None]:
    m = _TRAILING.match(name)
    return (m.group(1), m.group(2)) if m else (name, None)


def _ranges(numbers: list[str]) -> list[str]:
    """Number strings of one prefix folded into range items, in numeric order."""
    padded = {len(n) for n in numbers if len(n) > 1 and n.startswith("0")}
    # a number keeps its width when its prefix has padded numbers of that width (gpu08
    # and gpu12 fold to gpu[08-12]); else it is a plain number (gpu8 and gpu12: gpu[8-12])
    groups: dict[int, set[int]] = {}
    for n in numbers:
        groups.setdefault(len(n) if len(n) in padded else 0, set()).add(int(n))
    items: list[tuple[int, int, str]] = []
    for width, values in groups.items():
        ordered = sorted(values)
        start = prev = ordered[0]
        for v in [*ordered[1:], None]:
            if v is not None and v == prev + 1:
                prev = v
                continue
            lo, hi = f"{start:0{width}d}", f"{prev:0{width}d}"
            items.append((start, width, lo if start == prev else f"{lo}-{hi}"))
            if v is not None:
                start = prev = v
    return [text for _, _, text in sorted(items)]


def fold(names: Iterable[str]) -> str:
    """The host names as one compressed host list (duplicates dropped, sorted by prefix
    then number); ``""`` for none.  Raises :class:`HostlistError` for a name that is not a
    valid host name (it could not be read back)."""
    by_prefix: dict[str, list[str]] = {}
    plain: set[str] = set()
    for name in names:
        if not HOSTNAME.match(name):
            raise HostlistError(f"not a host name: {name!r}")
        prefix, number = _split(name)
        if number is None:
            plain.add(name)
        else:
            by_prefix.setdefault(prefix, []).append(number)
    items: list[tuple[str, int, str]] = [(p, -1, p) for p in plain]
    for prefix, numbers in by_prefix.items():
        ranges = _ranges(numbers)
        if len(ranges) == 1 and "-" not in ranges[0]:
            items.append((prefix, 0, prefix + ranges[0]))
        else:
            items.append((prefix, 0, f"{prefix}[{','.join(ranges)}]"))
    return ",".join(text for _, _, text in sorted(items))


def _items(text: str) -> list[str]:
    """Top-level comma separated items (commas inside brackets belong to the ranges)."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested '[' at {i + 1}")
        elif c == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unmatched ']' at {i + 1}")
        elif c == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    if depth:
        raise HostlistError("unclosed '['")
    out.append(text[start:])
    return [item.strip() for item in out if item.strip()]


_ITEM = re.compile(r"^([^\[\]]*)\[([^\[\]]*)\]([^\[\]]*)$")
_RANGE = re.compile(r"^(\d{1,18})(?:-(\d{1,18}))?$")


def iter_expand(text: str, budget: Budget | None = None) -> Iterator[str]:
    """The host names of a host list, one at a time, in the order written (duplicates
    kept, as Slurm's ``scontrol show hostnames`` keeps them).  Raises
    :class:`HostlistError`, at the latest when ``budget`` (default :data:`MAX_EXPAND`
    names) would be exceeded, before any name of the range that would exceed it."""
    budget = budget if budget is not None else Budget(MAX_EXPAND)
    for item in _items(text):
        m = _ITEM.match(item)
        if m is None:
            if "[" in item or "]" in item:
                raise HostlistError(f"bad item {item[:60]!r}")
            budget.take(1)
            yield item
            continue
        prefix, body, suffix = m.groups()
        for part in body.split(","):
            r = _RANGE.match(part.strip())
            if r is None:
                raise HostlistError(f"bad range {part[:40]!r} in {item[:60]!r}")
            lo_text, hi_text = r.group(1), r.group(2) or r.group(1)
            lo, hi = int(lo_text), int(hi_text)
            if hi < lo:
                raise HostlistError(f"reversed range {part[:40]!r} in {item[:60]!r}")
            budget.take(hi - lo + 1)
            width = len(lo_text)
            for v in range(lo, hi + 1):
                yield f"{prefix}{v:0{width}d}{suffix}"


def expand(text: str) -> list[str]:
    """The host names of a host list, in the order written (duplicates kept, as Slurm's
    ``scontrol show hostnames`` keeps them).  Raises :class:`HostlistError` (also past
    :data:`MAX_EXPAND` names)."""
    return list(iter_expand(text))
