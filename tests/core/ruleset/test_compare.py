"""``aiaudit.core.ruleset.compare``: the comparisons behind every param-driven rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.ruleset.compare import OPS, describe, holds


@pytest.mark.parametrize("actual,op,expected,ok", [
    ("10", "eq", 10, True),
    ("0010", "eq", 10, True),       # numerically equal
    ("10", "eq", "10.0", True),
    ("mq-deadline", "eq", "mq-deadline", True),
    ("a  b", "eq", "a b", True),    # whitespace-normalised text
    ("10", "ne", 11, True),
    ("10", "ne", "10", False),
    ("5", "le", 10, True),
    ("10", "le", 10, True),
    ("11", "le", 10, False),
    ("11", "lt", 11, False),
    ("12", "gt", 11, True),
    ("11", "ge", 11, True),
    ("2", "in", [1, 2], True),
    ("none", "in", ["none", "mq-deadline"], True),
    ("bfq", "in", ["none", "mq-deadline"], False),
    ("bfq", "not_in", ["none"], True),
    ("none", "not_in", "none", False),  # a scalar is a one-element list
    (True, "eq", 1, True),
    ("-1", "lt", 0, True),
    ("1e3", "ge", 1000, True),
])
def test_holds(actual, op, expected, ok) -> None:
    assert holds(actual, op, expected) is ok


@given(st.integers(), st.integers())
def test_number_ordering_matches_python(a: int, b: int) -> None:
    assert holds(str(a), "le", b) is (a <= b)
    assert holds(str(a), "gt", b) is (a > b)
    assert holds(str(a), "eq", b) is (a == b)
    assert holds(str(a), "ne", b) is (a != b)


@given(st.text(), st.sampled_from(OPS), st.one_of(st.integers(), st.text(),
                                                  st.lists(st.integers(), min_size=1)))
def test_holds_gives_bool_or_value_error(actual: str, op: str, expected) -> None:
    """An ordering with a non-number cannot be judged: ValueError (the check turns it into
    an error result); everything else is a plain bool."""
    try:
        assert holds(actual, op, expected) in (True, False)
    except ValueError:
        assert op in ("lt", "le", "gt", "ge")


@pytest.mark.parametrize("actual,expected", [("abc", 1), ("1", "abc"), ("", 0)])
def test_ordering_against_a_non_number_raises(actual, expected) -> None:
    with pytest.raises(ValueError, match="is not a number"):
        holds(actual, "ge", expected)


def test_fields_hold() -> None:
    """Per-field comparison moved to aiaudit.core.ruleset.predicates (fields of any shape)."""
    from aiaudit.core.ruleset.predicates import Predicate

    p = Predicate.from_params({"fields": [{"op": "ge", "value": 4096}, None,
                                          {"op": "ge", "value": 67108864}]})
    assert p.failures("4096 87380 67108864") == []
    assert p.failures("4096\t87380\t6291456") == ["field 3 (6291456) is not >= 67108864"]
    assert p.failures("1024") == ["field 1 (1024) is not >= 4096", "field 3 missing"]


def test_describe() -> None:
    assert describe("le", 10) == "<= 10"
    assert describe("in", ["none", "mq-deadline"]) == "one of none, mq-deadline"
    from aiaudit.core.ruleset.predicates import Predicate

    assert Predicate.from_params({"fields": [{"op": "ge", "value": 1}, None]}).text() == \
        "[>= 1] [any]"
