"""Decode a saved report without its ``rules`` section, which the fleet does not read, and
with exactly the answer of ``json.loads``.

Half of a ``dl-training`` report is the description of its rules (rationale, references);
the fleet reads each result's severity from the ruleset it judges by, not from the report.
Decoding that half is a third of the fleet's CPU; this module skips it, and stays exact.

Where the cut goes: ``aiaudit scan`` writes ``"rules": [...]`` just before ``"results":
[...]``, as ``\\n  "rules": [`` ... ``\\n  "results": [`` in an indented report and as
``,"rules":[`` ... ``,"results":[`` in a compact one (a raw line feed is only whitespace
between tokens, and inside a string every ``"`` follows a backslash, so both markers are
structural, but a hostile document may put either deeper), so the text before a marker
must decode as an object when closed with ``}``: the key belongs to the top-level object
(a bounded number of tries, :data:`MAX_CUTS`; the prefix is the small header, host and
summary).

Why the cut is exact: the text between the markers (the *region*) is accepted only when it
is exactly one member named ``rules`` with its separating comma: then the whole text is valid JSON
exactly when the shortened text is, and decodes to the same object less that member (the
other members keep their order and their duplicates, so a ``host`` given twice is the last
one in both; ``jq`` agrees).  A region that is anything else (a second member hidden between
the markers, unbalanced brackets) is not cut: the whole text is decoded.  Checking a region
costs as much as decoding it, so a region that passed is remembered (:data:`MAX_REGIONS`
of them, each at most :data:`MAX_REGION` characters): 10,000 reports of one ruleset share
one region text, and looking it up (hashing 110 KB) costs a tenth of decoding it.

Measured on a loaded 2-CPU machine (CPython 3.11, a 206 KB indented ``dl-training`` report):
``json.loads`` 1,090 us; cut and decode 630 us plus the lookup 46 us; checking a new
region 400 us.
"""

from __future__ import annotations

import json

_RULES = '\n  "rules": ['
_RESULTS = '\n  "results": ['
_COMPACT_RULES = ',"rules":['
_COMPACT_RESULTS = ',"results":['

MAX_CUTS = 4
"""Occurrences of a marker tried before decoding the whole text: an honest report has its
top-level key first (nested ones belong to results that come after it); each try decodes
the prefix, so a bound keeps a hostile document linear."""

MAX_REGIONS = 16
"""Region texts remembered as checked (a fleet of several rulesets and versions)."""

MAX_REGION = 1024 * 1024
"""Longest region remembered (a ``dl-training`` report's: 110 KB)."""

MAX_SKIM = 1024 * 1024
"""Longest text cut: a larger one (rare: a report of thousands of results) is decoded
whole, so that no shortened copy of it is held while it is decoded."""

_checked: dict[str, None] = {}


def _top_level_member(prefix: str) -> bool:
    """Does the key that follows ``prefix`` belong to the top-level object?"""
    head = prefix.rstrip()
    if head.endswith(","):  # indented text: the comma before the marker's line feed
        head = head[:-1]
    try:
        return isinstance(json.loads(head + "}"), dict)
    except (ValueError, RecursionError):
        return False


def _cut(text: str) -> tuple[int, int]:
    """(start, end) of the top-level rules member to leave out (with its comma), or
    ``(-1, -1)``."""
    for rules, results in ((_RULES, _RESULTS), (_COMPACT_RULES, _COMPACT_RESULTS)):
        start = text.find(rules)
        for _ in range(MAX_CUTS):
            if start <= 0:
                break
            end = text.find(results, start)
            if end < 0:
                break
            if _top_level_member(text[:start]):
                return start, end
            start = text.find(rules, start + 1)
    return -1, -1


def one_rules_member(region: str) -> bool:
    """Whether ``region`` (from a marker's first character to the next marker) is exactly
    one member named ``rules`` with its separating comma: ``\\n  "rules": [...],`` in
    indented text (the comma after it), ``,"rules":[...]`` in compact text (the comma
    before it), with any whitespace between the tokens."""
    if region in _checked:
        return True
    if region.startswith(","):
        body = region[1:]
    else:
        body = region.rstrip()
        if not body.endswith(","):
            return False
        body = body[:-1]
    try:
        member = json.loads("{" + body + "}")
    except (ValueError, RecursionError):
        return False
    if not isinstance(member, dict) or list(member) != ["rules"]:
        return False
    if len(region) <= MAX_REGION:
        if len(_checked) >= MAX_REGIONS:
            _checked.clear()
        _checked[region] = None
    return True


def loads(text: str) -> object:
    """``json.loads(text)``, except that a report (indented or compact) loses its ``rules``
    member where it can be cut exactly (see the module docstring).  Raises what
    ``json.loads`` raises for the whole text."""
    if len(text) > MAX_SKIM:  # no shortened copy of a large text: memory matters more
        return json.loads(text)
    start, end = _cut(text)
    if start > 0 and end > start and one_rules_member(text[start:end]):
        try:
            return json.loads(text[:start] + text[end:])
        except (ValueError, RecursionError):
            pass  # let the whole text say what is wrong with it, and where
    return json.loads(text)
