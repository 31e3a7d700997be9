"""``--since``: the previous fleet report is an input like any other, bounded, and a bad
one is a problem line, never the run (issue 25: a 13 KB host list took 2.6 GB)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from aiaudit.fleet import bounds
from aiaudit.fleet.aggregate import aggregate
from aiaudit.fleet.extract import from_report
from aiaudit.fleet.render.json import render
from aiaudit.fleet.since import SinceError, compare, load_previous, parse_previous
from tests.fleet.hostile import SWAP, node


def _doc(nodes: str, failing: list[str]) -> str:
    rules = [{"id": f"R{i}", "failing": {"hosts": f}} for i, f in enumerate(failing)]
    return json.dumps({"kind": "aiaudit.fleet", "schema_version": "1.0",
                       "groups": [{"nodes": {"hosts": nodes}, "rules": rules}]})


def test_our_own_report_reads_back() -> None:
    before = aggregate(from_report(d, f"{i}") for i, d in enumerate(
        [node(1, fail=True), node(2), node(3, fail=True)]))
    prev = parse_previous(render(before, "medium", 0), "before.json")
    assert prev.hosts == ("gpu01", "gpu02", "gpu03")
    assert [prev.hosts[i] for i in prev.failing[SWAP]] == ["gpu01", "gpu03"]
    after = aggregate(from_report(d, f"{i}") for i, d in enumerate(
        [node(1), node(2, fail=True), node(4)]))
    s = compare(after, prev, "before.json")
    assert [(c.host, c.worse, c.better) for c in s.changes] == [
        ("gpu01", (), (SWAP,)), ("gpu02", (SWAP,), ())]
    assert s.new_hosts == ("gpu04",) and s.gone_hosts == ("gpu03",)


@pytest.mark.parametrize(("text", "message"), [
    (_doc("n[0-99999]", [",".join(["n[0-99999]"] * 60)]), "more than 100,000 names"),
    (_doc("n[0-9999999]", []), "groups/0/nodes: bad host list: more than 100,000 names"),
    (_doc("n[1-3]", ["n4"]), "groups/0/rules/0/failing: n4 is not one of the report's nodes"),
    (_doc("n[1-3]", ["n[3-1]"]), "reversed range"),
    ('{"kind": "aiaudit.fleet", "schema_version": "1.0", "groups": [{"nodes": {"hosts": 5}}]}',
     "groups/0/nodes: missing, or its hosts not a string"),
    ('{"kind": "aiaudit.fleet", "schema_version": "1.0", "x": ' + "9" * 5000 + "}",
     "an integer of more than 4,300 digits"),
    ("[" * 100_000, "nested too deeply"),
    ('{"kind": "other"}', "not a valid aiaudit fleet JSON report: kind"),
    ("[" + ",".join(["{}"] * 700_000) + "]", "MB to decode"),
])
def test_bad_previous_reports_are_one_error_naming_the_file(text: str, message: str) -> None:
    with pytest.raises(SinceError, match=message) as got:
        parse_previous(text, "prev.json")
    assert str(got.value).startswith("prev.json: ")


def test_the_total_of_failing_names_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "MAX_SINCE_NAMES", 250)
    with pytest.raises(SinceError, match="more than"):
        parse_previous(_doc("n[0-99]", ["n[0-99]"] * 3), "prev.json")


def test_a_bomb_costs_little_memory() -> None:
    """20 rules naming 100,000 nodes 60 times each: refused at the first list, after at
    most 100,000 names, in a few megabytes."""
    text = _doc("n[0-99999]", [",".join(["n[0-99999]"] * 60)] * 20)
    assert len(text) < 20_000
    tracemalloc.start()
    try:
        with pytest.raises(SinceError):
            parse_previous(text, "bomb.json")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 30 * 1024 * 1024, f"{peak / 1e6:.0f} MB"


def test_unreadable_files_are_since_errors(tmp_path: Path) -> None:
    with pytest.raises(SinceError, match="cannot read"):
        load_previous(str(tmp_path / "missing.json"))
    with pytest.raises(SinceError, match="not a regular file"):
        load_previous(str(tmp_path))
