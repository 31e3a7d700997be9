"""Issue 25: every input of the fleet is bounded, and a bad one costs only itself (a
problem line naming it), never the run."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiaudit.fleet import bounds, extract
from aiaudit.fleet.collect import collect
from aiaudit.fleet.extract import BadDocument, EventAssembler, from_event, from_report
from aiaudit.fleet.inputs import decode, split, split_text
from tests.fleet.hostile import compact, node
from tests.fleet.reports import event_lines, report


def test_an_integer_of_5000_digits_is_a_problem_with_its_place(tmp_path: Path) -> None:
    d = node(1)
    text = json.dumps(d, indent=2).replace('"duration_s": ', '"duration_s": ' + "7" * 5000
                                           + ', "x": ', 1)
    (tmp_path / "big.json").write_text(text)
    (tmp_path / "ok.json").write_text(compact(node(2)))
    fleet = collect([str(tmp_path)])
    assert fleet.node_count == 1
    (problem,) = fleet.problems
    line = text[:text.index("7" * 100)].count("\n") + 1
    assert problem.startswith(f"{tmp_path / 'big.json'}:{line}: invalid JSON (column ")
    assert "an integer of more than 4,300 digits" in problem


def test_a_document_that_would_decode_too_big_is_refused_undecoded(monkeypatch) -> None:
    text = '{"results":[' + ",".join(["{}"] * 600_000) + "]}"
    got = decode(text, "x.json", 1)
    assert not hasattr(got, "data") and "MB to decode" in str(got)
    assert bounds.decoded_estimate(text) > bounds.MAX_DECODED


def test_more_results_than_a_report_may_hold_refuse_it(monkeypatch) -> None:
    monkeypatch.setattr(bounds, "MAX_RESULTS", 50)
    with pytest.raises(BadDocument, match="more than the 50 a report may hold"):
        from_report(node(1), "x")


def test_a_report_from_the_future_is_refused_within_the_skew_it_is_not(monkeypatch) -> None:
    monkeypatch.setattr(extract, "_now", lambda: 1_800_000_000.0)  # 2027-01-15T08:00:00Z
    d = node(1, started="2027-01-15T08:09:00Z")  # 9 minutes ahead: clock skew
    assert from_report(d, "x").started_at == 1_800_000_540.0
    d = node(1, started="2027-01-15T08:11:00Z")
    with pytest.raises(BadDocument, match="11 minutes ahead of this machine's clock"):
        from_report(d, "x")
    for bad in ("9999-12-31T23:59:59Z", "yesterday", "2026-13-01T00:00:00Z", "", 5,
                "2026-12-01T10:00:00Z" + " " * 100):
        with pytest.raises(BadDocument, match="started"):
            from_report(node(1, started=bad), "x")
    offset = node(1, started="2027-01-15T09:00:00+02:00")
    assert from_report(offset, "x").started_at == 1_800_000_000.0 - 3600


def test_identifiers_and_long_fields_are_checked_and_capped() -> None:
    d = node(1)
    d["host"]["machine_id"] = "a\x1b[2J" + "b" * 10
    with pytest.raises(BadDocument, match=r"host/machine_id: .* is not an identifier"):
        from_report(d, "x")
    d = node(1)
    d["results"][0]["subject"] = "s" * 100_000
    d["results"][0]["title"] = "t" * 100_000
    d["results"][0]["actual"] = {"deep": [list(range(100_000))]}
    item = from_report(d, "x").items[0]
    assert len(item[1]) == extract.MAX_VALUE and item[1].endswith("...")
    assert len(item[4]) == extract.MAX_TITLE
    assert len(item[5]) == extract.MAX_VALUE and item[5].startswith('{"deep": [[0, 1')
    d = node(1)
    d["results"][0]["rule_id"] = "not a rule id"
    with pytest.raises(BadDocument, match="is not a rule id"):
        from_report(d, "x")
    d = node(1)
    d["results"][0]["status"] = ["fail"]  # unhashable: a problem, not a TypeError
    with pytest.raises(BadDocument, match="status"):
        from_report(d, "x")
    d = node(1)
    d["host"] = {**d["host"], **{f"fact{i}": i for i in range(1000)}}
    host_facts = [n for n, _v in from_report(d, "x").facts if "." not in n]  # no class facts
    assert len(host_facts) == bounds.MAX_FACTS


def test_endless_unusable_documents_stop_the_source_not_the_fleet(tmp_path: Path) -> None:
    class Endless(io.TextIOBase):
        def readline(self, size: int = -1) -> str:
            return "{\n"

    (tmp_path / "ok.json").write_text(compact(node(2)))
    fleet = collect(["-", str(tmp_path)], stdin=Endless())
    assert fleet.node_count == 1
    assert fleet.problem_count == bounds.MAX_BAD_DOCUMENTS + 1
    assert fleet.problems[-1] == (f"<stdin>: {bounds.MAX_BAD_DOCUMENTS} unusable documents: "
                                  f"the rest is not read")


def test_endless_text_without_a_document_stops(monkeypatch) -> None:
    monkeypatch.setattr(bounds, "MAX_SKIP", 10_000)
    monkeypatch.setattr(bounds, "CHUNK", 1000)

    class Garbage(io.TextIOBase):
        def readline(self, size: int = -1) -> str:
            return "x" * size  # one endless line, no document start

    got = list(split(Garbage(), "<stdin>"))
    assert [str(p) for p in got] == [
        "<stdin>:1: not a JSON object (a report or event starts with '{' at the start of a "
        "line)", "<stdin>:1: no document starts in 10000 characters: the rest is not read"]


def test_a_fifo_among_the_reports_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "trap.json")
    (tmp_path / "ok.json").write_text(compact(node(2)))
    done: list = []
    t = threading.Thread(target=lambda: done.append(collect([str(tmp_path)])), daemon=True)
    t.start()
    t.join(60)  # generous wall time: only a hang could take this long
    assert done, "collect hung on a FIFO"
    assert done[0].node_count == 1
    assert done[0].problems == (f"{tmp_path / 'trap.json'}: not a regular file",)


def test_events_of_one_run_must_name_one_node() -> None:
    lines = event_lines(report("gpu01", "a" * 32))
    evil = json.loads(lines[0])
    evil["host"]["hostname"] = "evil01"
    asm = EventAssembler()
    pieces = [from_event(json.loads(x), f"<stdin>:{i}") for i, x in enumerate(lines, 1)]
    assert asm.add(pieces[0]) is None
    refused = asm.add(from_event(evil, "<stdin>:99"))
    assert isinstance(refused, str) and "names host evil01" in refused
    out = [asm.add(p) for p in pieces[1:]]
    assert out[-1].hostname == "gpu01" and len(out[-1].items) == len(lines) - 1


def test_open_event_runs_are_bounded(monkeypatch) -> None:
    monkeypatch.setattr(bounds, "MAX_OPEN_RUNS", 3)
    lines = []
    for i in range(5):
        lines += event_lines(report(f"gpu0{i}", f"{i:032x}"))[:2]  # results, no summary
    fleet = collect(["-"], stdin=io.StringIO("\n".join(lines) + "\n"))
    assert fleet.node_count == 0
    msgs = "\n".join(fleet.problems)
    assert msgs.count("runs without their summary event at once") == 2
    assert msgs.count("truncated stream") == 3


_pieces = st.sampled_from(["{", "}", "\n", "  ", "x", '"a"', "\n{", "\n\n", '{"a":1}\n'])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_pieces, max_size=14).map("".join))
def test_a_file_in_memory_splits_as_a_stream_does(text: str) -> None:
    assert list(split_text(text, "f")) == list(split(io.StringIO(text), "f"))
