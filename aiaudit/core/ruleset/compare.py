# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Value comparisons shared by param-driven checks (equal, at most, at least, one of...).

The primitives: :mod:`aiaudit.core.ruleset.predicates` builds every rule expectation (ranges, sets,
per-field comparisons) on :func:`holds` and :func:`describe`."""

from __future__ import annotations

from typing import Any

OPS = ("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in")
OP_TEXT = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "in": "one of",
           "not_in": "not one of"}


def _num(v: Any) -> int | float | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return v
    try:
        return int(str(v).strip(), 10)
    except ValueError:
        try:
            return float(str(v).strip())
        except ValueError:
            return None


def _eq(a: Any, b: Any) -> bool:
    na, nb = _num(a), _num(b)
    if na is not None and nb is not None:
        return na == nb
    return " ".join(str(a).split()) == " ".join(str(b).split())


def holds(actual: Any, op: str, expected: Any) -> bool:
    """True if ``actual op expected``.  Numbers compare numerically (``"0010" == 10``),
    anything else as whitespace-normalised text.  An ordering (lt/le/gt/ge) with a value
    that is not a number raises :class:`ValueError`: the value cannot be judged.
    """
    if op == "eq":
        return _eq(actual, expected)
    if op == "ne":
        return not _eq(actual, expected)
    if op in ("in", "not_in"):
        choices = expected if isinstance(expected, (list, tuple)) else [expected]
        found = any(_eq(actual, c) for c in choices)
        return found if op == "in" else not found
    na, nb = _num(actual), _num(expected)
    if na is None or nb is None:
        bad = actual if na is None else expected
        raise ValueError(f"'{bad}' is not a number")
    return {"lt": na < nb, "le": na <= nb, "gt": na > nb, "ge": na >= nb}[op]


def describe(op: str, expected: Any) -> str:
    """Human form of an expectation (``<= 10``, ``one of none, mq-deadline``)."""
    if isinstance(expected, (list, tuple)):
        expected = ", ".join(str(e) for e in expected)
    return f"{OP_TEXT.get(op, op)} {expected}"
