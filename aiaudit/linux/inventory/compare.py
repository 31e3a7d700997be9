"""Hold a node's fact to a captured value (pure)."""

from __future__ import annotations

from typing import Any, Mapping

from aiaudit.core.startup.records import record


@record
class Verdict:
    """Whether the node matches, and the differences in words."""

    same: bool
    differences: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """Not differences: devices or packages only one side has, where another fact decides."""


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def _within(expected: Any, actual: Any, tolerance: float) -> bool:
    e, a = _num(expected), _num(actual)
    if e is None or a is None:
        return bool(expected == actual)
    return abs(a - e) <= abs(e) * tolerance


def compare(compare_as: str, expected: Any, actual: Any, tolerance: float = 0.0) -> Verdict:
    """``expected`` (the captured value) against ``actual`` (this node's), as the fact's
    ``compare`` says (see :data:`aiaudit.linux.inventory.model.COMPARES`)."""
    if compare_as in ("per_device", "required_keys"):
        if not isinstance(expected, Mapping) or not isinstance(actual, Mapping):
            return Verdict(expected == actual, () if expected == actual else
                           (f"expected {expected!r}, found {actual!r}",))
        return _mapping(compare_as, expected, actual)
    if compare_as == "tolerance":
        ok = _within(expected, actual, tolerance)
        return Verdict(ok, () if ok else (f"{actual} is not within {tolerance:.0%} of "
                                          f"{expected}",))
    ok = expected == actual
    return Verdict(ok, () if ok else (f"expected {expected}, found {actual}",))


def _mapping(compare_as: str, expected: Mapping[str, Any], actual: Mapping[str, Any]
             ) -> Verdict:
    diffs: list[str] = []
    notes: list[str] = []
    for key in sorted(expected):
        if key not in actual:
            if compare_as == "required_keys":
                diffs.append(f"{key}: expected {expected[key]}, not installed")
            else:
                notes.append(f"{key}: not on this node (the count rule decides)")
        elif actual[key] != expected[key]:
            diffs.append(f"{key}: expected {expected[key]}, found {actual[key]}")
    if compare_as == "per_device" and expected and not set(expected) & set(actual):
        diffs.append("none of the class's devices is on this node (" +
                     ", ".join(sorted(expected)[:8]) + ")")
    extra = sorted(set(actual) - set(expected))
    if extra:
        notes.append("only on this node: " + ", ".join(f"{k} {actual[k]}" for k in extra[:20]))
    return Verdict(not diffs, tuple(diffs), tuple(notes))
