"""The rules-less decoding of saved reports gives exactly ``json.loads`` less ``rules``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.fleet import skim
from tests.fleet.reports import report


def _without_rules(d: dict) -> dict:
    return {k: v for k, v in d.items() if k != "rules"}


def test_a_real_report_loses_only_its_rules() -> None:
    d = report("gpu001")
    assert d["rules"]
    text = json.dumps(d, indent=2)
    assert skim.loads(text) == _without_rules(d)


def test_compact_reports_lose_their_rules_and_other_forms_decode_whole() -> None:
    d = report("gpu001")
    assert skim.loads(json.dumps(d, separators=(",", ":"))) == _without_rules(d)
    for text in (json.dumps(d), json.dumps(d, indent=4)):
        assert skim.loads(text) == d


def test_a_nested_rules_key_is_not_cut() -> None:
    """``,"rules":[`` below the top level (here before the top-level one, with a nested
    ``"results"`` after it) is no marker: it stays, and the top-level one is cut."""
    d = {"host": {"x": 1, "rules": [1, {"a": 2}], "results": [3]}, "rules": [4],
         "results": [5]}
    text = json.dumps(d, separators=(",", ":"))
    assert skim.loads(text) == {"host": d["host"], "results": [5]}
    # a "results" inside the rules ends no cut: the whole text is decoded
    inside = {"a": 0, "rules": [{"p": 1, "results": [2]}, 3], "results": [6]}
    text = json.dumps(inside, separators=(",", ":"))
    assert skim.loads(text) == inside


def test_marker_text_inside_strings_is_not_a_marker() -> None:
    d = report("gpu001")
    d["results"][0]["title"] = '\n  "rules": [\n  "results": ['
    d["host"]["hostname"] = '\n  "results": ['
    text = json.dumps(d, indent=2)
    assert skim.loads(text) == _without_rules(d)


def test_errors_are_those_of_the_whole_text() -> None:
    text = json.dumps(report("gpu001"), indent=2)
    cut = text[: len(text) - 100]
    with pytest.raises(json.JSONDecodeError) as got:
        skim.loads(cut)
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(cut)
    assert (got.value.lineno, got.value.colno) == (want.value.lineno, want.value.colno)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                     lambda c: st.lists(c, max_size=4)
                     | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=20)


@given(st.dictionaries(st.sampled_from(["a", "rules", "results", "z", "\n  \"rules\": ["]),
                       _json, max_size=5))
def test_any_document_decodes_as_json_loads_less_rules(d: dict) -> None:
    text = json.dumps(d, indent=2)
    got = skim.loads(text)
    want = json.loads(text)
    keys = list(want)
    if ("rules" in keys and "results" in keys and keys.index("rules") < keys.index("results")
            and isinstance(want["rules"], list) and isinstance(want["results"], list)):
        # the cut drops the rules and whatever stands between them and the results
        between = keys[keys.index("rules"):keys.index("results")]
        less = {k: v for k, v in want.items() if k not in between}
        assert got in (less, want)
        if text.count(',"rules":[') <= skim.MAX_CUTS:
            assert got == less
    else:
        assert got == want


_nested = st.recursive(st.none() | st.integers() | st.text(max_size=10),
                       lambda c: st.lists(c, max_size=3)
                       | st.dictionaries(st.sampled_from(["rules", "results", "a", ",\"rules\":["]),
                                         c, max_size=3), max_leaves=15)


@given(st.dictionaries(st.sampled_from(["a", "rules", "results", "z"]), _nested, max_size=5))
def test_any_compact_document_decodes_as_json_loads_less_rules(d: dict) -> None:
    """Compact text, with ``rules`` and ``results`` keys nested anywhere too: the result is
    ``json.loads`` less the top-level rules, or (a nested key first, more than
    ``skim.MAX_CUTS`` times) the whole of it, never anything else."""
    text = json.dumps(d, separators=(",", ":"))
    got = skim.loads(text)
    want = json.loads(text)
    keys = list(want)
    if ("rules" in keys and "results" in keys and 0 < keys.index("rules") < keys.index("results")
            and isinstance(want["rules"], list) and isinstance(want["results"], list)):
        between = keys[keys.index("rules"):keys.index("results")]
        less = {k: v for k, v in want.items() if k not in between}
        assert got in (less, want)
        if text.count(',"rules":[') <= skim.MAX_CUTS:
            assert got == less
    else:
        assert got == want
