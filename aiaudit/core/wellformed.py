# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Is what a check yielded a well-formed :class:`~aiaudit.core.model.Result`?

Records are not checked when they are built (a check may write ``Result(status="fail",
...)``, or put a ``set`` in ``data``), and every reporter trusts the types: one malformed
result would make them all fail.  The runner asks :func:`result_problem` once per result a
check yields (built-in or third-party), and turns a malformed one into an ``error`` result
for its rule.  Well-formed means what the JSON report can hold and read back
(``schemas/report.schema.json``): the field types of the model, an evidence kind and a
snippet kind of the schema, a path on ``file`` and ``edit`` snippets, ``data`` of JSON
values only.  Nothing is copied; ``data`` is walked once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aiaudit.core.model import (
    Aspect,
    Evidence,
    Remediation,
    Result,
    Snippet,
    SnippetKind,
    Status,
)

MAX_RESULTS = 10_000
"""Most results one rule may give (more is an ``error`` result: a check that yields
forever must not fill the scan's memory)."""

EVIDENCE_KINDS = frozenset({"file", "runtime", "command", "default"})
"""The kinds of :class:`~aiaudit.core.model.Evidence` (the report schema's enum)."""

MAX_DATA_DEPTH = 32
"""Deepest nesting of a result's ``data`` (a saved report nested deeper is refused when read
back; real checks nest three levels)."""

_SCALARS = (str, int, float, bool, type(None))


def _type(value: object) -> str:
    """``a dict``, ``an int``: the type of ``value`` with its article."""
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiouAEIOU' else 'a'} {name}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


MAX_INT_BITS = 14_000
"""Largest integer in result data: ~4,200 decimal digits, under the 4,300 digits that
``int()``/``str()`` (and so JSON writers and readers) take by default."""


def _huge(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) \
        and value.bit_length() > MAX_INT_BITS


def _huge_message(value: object) -> str:
    bits = value.bit_length() if isinstance(value, int) else 0
    return f"data holds an integer of {bits:,} bits, more than JSON readers take"


def _optional_str(value: object) -> bool:
    return value is None or isinstance(value, str)


def result_problem(obj: object) -> str | None:
    """What is wrong with ``obj`` as a result a check yields, or ``None`` when it is a
    well-formed :class:`Result` (see the module docstring)."""
    if not isinstance(obj, Result):
        return f"{_type(obj)}, not a Result"
    if not isinstance(obj.status, Status):
        return f"status is {_type(obj.status)} ({obj.status!r:.40}), not a Status"
    if obj.status is Status.WAIVED:
        return "status is waived (only a waiver makes a result waived)"
    for name in ("subject", "message"):
        if not isinstance(getattr(obj, name), str):
            return f"{name} is {_type(getattr(obj, name))}, not a str"
    for name in ("expected", "actual"):
        if not _optional_str(getattr(obj, name)):
            return f"{name} is {_type(getattr(obj, name))}, not a str or None"
    if obj.aspect is not None and not isinstance(obj.aspect, Aspect):
        return f"aspect is {_type(obj.aspect)}, not an Aspect or None"
    return (_evidence_problem(obj.evidence) or _remediation_problem(obj.remediation)
            or _data_problem(obj.data))


def _evidence_problem(evidence: object) -> str | None:
    if not isinstance(evidence, tuple):
        return f"evidence is {_type(evidence)}, not a tuple of Evidence"
    for i, e in enumerate(evidence):
        if not isinstance(e, Evidence):
            return f"evidence[{i}] is {_type(e)}, not an Evidence"
        if not isinstance(e.source, str) or not _optional_str(e.value) \
                or not _optional_str(e.path):
            return f"evidence[{i}]: source, value or path is not a str"
        if e.line is not None and not (_is_int(e.line) and e.line >= 1):
            return f"evidence[{i}]: line {e.line!r:.20} is not a line number"
        if not isinstance(e.kind, str) or e.kind not in EVIDENCE_KINDS:
            return f"evidence[{i}]: kind {e.kind!r:.40} is not one of " \
                   f"{', '.join(sorted(EVIDENCE_KINDS))}"
    return None


def _remediation_problem(rem: object) -> str | None:
    if rem is None:
        return None
    if not isinstance(rem, Remediation):
        return f"remediation is {_type(rem)}, not a Remediation"
    for name in ("summary", "manual", "followup"):
        if not isinstance(getattr(rem, name), str):
            return f"remediation {name} is {_type(getattr(rem, name))}, not a str"
    if not isinstance(rem.snippets, tuple):
        return f"remediation snippets is {_type(rem.snippets)}, not a tuple of Snippet"
    for i, s in enumerate(rem.snippets):
        why = _snippet_problem(s)
        if why:
            return f"remediation snippets[{i}]: {why}"
    return None


def _snippet_problem(s: object) -> str | None:
    if not isinstance(s, Snippet):
        return f"{_type(s)}, not a Snippet"
    if not isinstance(s.kind, SnippetKind):
        return f"kind is {_type(s.kind)} ({s.kind!r:.40}), not a SnippetKind"
    if not isinstance(s.content, str) or not isinstance(s.description, str):
        return "content or description is not a str"
    if not _optional_str(s.path):
        return f"path is {_type(s.path)}, not a str or None"
    if s.path is None and s.kind in (SnippetKind.FILE, SnippetKind.EDIT):
        return f"a {s.kind.value} snippet without a path"
    if not (_is_int(s.mode) and 0 <= s.mode <= 0o7777):
        return f"mode {s.mode!r:.20} is not a file mode"
    return None


def _data_problem(data: object) -> str | None:
    """Whether ``data`` is a mapping of JSON values (finite numbers, keys JSON can write),
    nested at most :data:`MAX_DATA_DEPTH` levels; walked iteratively."""
    if not isinstance(data, Mapping):
        return f"data is {_type(data)}, not a mapping"
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return f"data holds the number {value!r}, which JSON cannot"
        if _huge(value):
            return _huge_message(value)
        if isinstance(value, _SCALARS):
            continue
        if depth > MAX_DATA_DEPTH:
            return f"data is nested deeper than {MAX_DATA_DEPTH} levels"
        if isinstance(value, Mapping):
            if not all(isinstance(k, _SCALARS) for k in value):
                return "data holds a mapping with a key JSON cannot write"
            big = next((k for k in value if _huge(k)), None)
            if big is not None:
                return _huge_message(big)
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend((v, depth + 1) for v in value)
        else:
            return f"data holds {_type(value)}, which JSON cannot"
    return None
