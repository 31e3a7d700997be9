"""The rules-less decoding of saved reports gives exactly ``json.loads`` less ``rules``:
the same members, the same duplicates resolved the same way, the same errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
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


def _exact(text: str) -> None:
    """``skim.loads`` is ``json.loads`` less (perhaps) the top-level ``rules`` member, or
    raises what ``json.loads`` raises."""
    try:
        want = json.loads(text)
    except (ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)):
            skim.loads(text)
        return
    got = skim.loads(text)
    if isinstance(want, dict) and isinstance(got, dict) and got != want:
        # only a top-level rules member may be left out (the fleet reads no "rules"; with
        # two of them, the one left may be the other)
        assert "rules" in want
        got, want = _without_rules(got), _without_rules(want)
    assert got == want
    if isinstance(got, dict) and isinstance(want, dict):  # the same order, but for "rules"
        assert [k for k in got if k != "rules"] == [k for k in want if k != "rules"]


def test_a_second_host_between_rules_and_results_is_the_one_json_loads_reads() -> None:
    """A ``host`` hidden between the rules and the results (where the cut goes) is the one
    ``json.loads`` and ``jq`` read (the last): the region is not one ``rules`` member, so
    the whole text is decoded (issue 25: fleet said one host, ``jq`` another)."""
    d = report("victim01")
    for text, marker, extra in (
            (json.dumps(d, indent=2), '\n  "results": [', ' "host": {"hostname": "evil"},'),
            (json.dumps(d, separators=(",", ":")), ',"results":[',
             ',"host":{"hostname":"evil"}')):
        at = text.index(marker)
        hostile = text[:at] + extra + text[at:]
        assert json.loads(hostile)["host"]["hostname"] == "evil"
        assert skim.loads(hostile)["host"]["hostname"] == "evil"
        _exact(hostile)


def test_a_checked_region_is_remembered_and_still_exact() -> None:
    text = json.dumps(report("gpu001"), separators=(",", ":"))
    skim.loads(text)
    start, end = skim._cut(text)
    assert text[start:end] in skim._checked
    # the same region before a broken tail: the error of the whole text
    broken = text[:-2]
    _exact(broken)


def test_a_region_that_is_not_one_member_is_not_cut() -> None:
    for region in ('\n  "rules": [1],\n  "x": 2,', '\n  "rules": [1]', ',"rules":[1],"x":2',
                   ',"rules":[1],', '\n  "rules": [1,', '\n  "rules": [1]],'):
        assert not skim.one_rules_member(region), region
    assert skim.one_rules_member('\n  "rules": [{"a": "],"}],\n  ')
    assert skim.one_rules_member(',"rules":[1],"rules":[2]')  # two rules: both ignored


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                     lambda c: st.lists(c, max_size=4)
                     | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=20)
_keys = st.sampled_from(["a", "rules", "results", "z", "host", "\n  \"rules\": ["])


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_keys, _json), max_size=6), st.booleans())
def test_any_document_decodes_as_json_loads_less_rules(members: list, compact: bool) -> None:
    """Any object, members in any order, keys repeated (what ``json.dumps`` of a dict cannot
    write, a hostile report can), indented or compact."""
    if compact:
        text = "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v, separators=(',', ':'))}"
                              for k, v in members) + "}"
    else:
        text = "{" + ",".join(f"\n  {json.dumps(k)}: {json.dumps(v, indent=2)}"
                              for k, v in members) + "\n}"
    _exact(text)


_nested = st.recursive(st.none() | st.integers() | st.text(max_size=10),
                       lambda c: st.lists(c, max_size=3)
                       | st.dictionaries(st.sampled_from(["rules", "results", "a", ",\"rules\":["]),
                                         c, max_size=3), max_leaves=15)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["a", "rules", "results", "z"]), _nested, max_size=5),
       st.integers(min_value=0, max_value=40), st.sampled_from(["", "}", "]", ",", "x"]))
def test_any_compact_document_decodes_as_json_loads_less_rules(d: dict, cut: int,
                                                               junk: str) -> None:
    """Compact text, with ``rules`` and ``results`` keys nested anywhere, whole or cut
    short or with junk spliced in: ``json.loads``'s answer or its error, never another."""
    text = json.dumps(d, separators=(",", ":"))
    _exact(text)
    at = max(0, len(text) - cut)
    _exact(text[:at] + junk + text[at:])
