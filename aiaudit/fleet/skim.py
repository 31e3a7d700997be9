"""Decode a saved report without its ``rules`` section, which the fleet does not read.

Half of a ``dl-training`` report is the description of its 61 rules (rationale,
references); the fleet takes each result's severity and title from the result itself.
Decoding a 130 KB report took 0.34 ms of CPU with the rules and 0.18 ms without them
(``json.loads``, CPython 3.11, this machine), out of about 0.6 ms per report in all.

The cut is exact, not a guess: ``aiaudit scan --format json`` writes its document with
``indent=2``, and a raw line feed can only appear in JSON as whitespace between tokens
(inside a string it is the escape ``\\n``), so a line feed followed by exactly two spaces
and ``"rules": [`` is the top-level key and nothing else; the same holds for the
``"results": [`` that follows it.  When the markers are absent or out of order (compact
JSON lines, another indentation), or the shortened text does not decode, the whole text is
decoded: the result is always that of ``json.loads``, less (where the cut was found) the
top-level ``rules``.

``scan`` writes compact JSON to files and pipes (``--pretty`` or a terminal indents it).
There ``,"rules":[`` can only be structural too (inside a string every ``"`` follows a
backslash), but it may sit at any depth, so two checks make the cut exact: the text before
it, closed with ``}``, must decode (the key is a member of the top-level object: the
prefix is the small header, host and summary), and the shortened text must decode (a cut
that ended inside the rules, at a nested ``"results"``, leaves unbalanced brackets).
"""

from __future__ import annotations

import json

_RULES = '\n  "rules": ['
_RESULTS = '\n  "results": ['
_COMPACT_RULES = ',"rules":['
_COMPACT_RESULTS = ',"results":['


def _top_level_member(prefix: str) -> bool:
    """Does the key that follows ``prefix`` belong to the top-level object?"""
    try:
        return isinstance(json.loads(prefix + "}"), dict)
    except (json.JSONDecodeError, RecursionError):
        return False


MAX_CUTS = 4
"""Occurrences of ``,"rules":[`` tried in compact text before decoding the whole text: an
honest report has its top-level key first (nested ones belong to results that come after
it); each try decodes the prefix, so a bound keeps a hostile document linear."""


def _cut(text: str) -> tuple[int, int]:
    """(start, end) of the top-level rules member to leave out, or ``(-1, -1)``."""
    start = text.find(_RULES)
    if start > 0:
        return start, text.find(_RESULTS, start)
    start = text.find(_COMPACT_RULES)
    for _ in range(MAX_CUTS):
        if start <= 0:
            break
        end = text.find(_COMPACT_RESULTS, start)
        if end < 0:
            break
        if _top_level_member(text[:start]):
            return start, end
        start = text.find(_COMPACT_RULES, start + 1)
    return -1, -1


def loads(text: str) -> object:
    """``json.loads(text)``, except that a report (indented or compact) loses its
    ``rules``; where no exact cut is found the whole text is decoded (rules included, which
    the fleet ignores).  Raises what ``json.loads`` raises (for the whole text)."""
    start, end = _cut(text)
    if start > 0 and end > start:
        try:
            return json.loads(text[:start] + text[end:])
        except (json.JSONDecodeError, RecursionError):
            pass  # let the whole text say what is wrong with it
    return json.loads(text)
