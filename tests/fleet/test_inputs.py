"""Reading fleet inputs: files, directories, globs, stdin; bad documents cost only
themselves, with file and line."""

from __future__ import annotations

import io
import json
from pathlib import Path

from aiaudit.fleet.collect import collect
from aiaudit.fleet.inputs import Document, InputProblem, expand_sources, read_documents
from tests.fleet.reports import event_lines, report, write


def _docs(text: str) -> list[Document | InputProblem]:
    return list(read_documents(["-"], stdin=io.StringIO(text)))


def test_directory_glob_and_file(tmp_path: Path) -> None:
    write(tmp_path / "a", [report("gpu001"), report("gpu002")])
    write(tmp_path / "b" / "sub", [report("gpu003")])
    (tmp_path / "a" / "notes.txt").write_text("not a report")
    one = write(tmp_path / "c", [report("gpu004")])[0]
    srcs = list(expand_sources([str(tmp_path / "a"), str(tmp_path / "b" / "*" / "*.json"),
                                str(one), str(tmp_path / "missing*.json")]))
    assert [Path(s).parent.name for s in srcs[:4] if isinstance(s, str)] == ["a", "a", "sub",
                                                                              "c"]
    assert isinstance(srcs[-1], InputProblem) and "no such file" in srcs[-1].message
    fleet = collect([str(tmp_path / "a"), str(tmp_path / "b"), str(one)])
    assert fleet.node_count == 4 and not fleet.problems


def test_truncated_report_is_one_line_and_the_rest_counts(tmp_path: Path) -> None:
    paths = write(tmp_path, [report("gpu001"), report("gpu002"), report("gpu003")])
    text = paths[1].read_text()
    paths[1].write_text(text[: len(text) // 2])
    fleet = collect([str(tmp_path)])
    assert fleet.node_count == 2
    assert len(fleet.problems) == 1
    problem = fleet.problems[0]
    assert problem.startswith(f"{paths[1]}:") and "truncated JSON document" in problem


def test_concatenated_reports_on_stdin_with_a_cut_one_between() -> None:
    a, b, c = (json.dumps(report(h), indent=2) for h in ("n1", "n2", "n3"))
    text = a + "\n" + b[: len(b) // 3] + "\n" + c + "\n"
    fleet = collect(["-"], stdin=io.StringIO(text))
    assert fleet.node_count == 2
    assert len(fleet.problems) == 1
    # named where the cut document's text stops (its last character, not the blank or
    # indentation after it, wherever the cut falls)
    cut = b[: len(b) // 3].rstrip()
    line = a.count("\n") + 2 + cut.count("\n")
    column = len(cut) - cut.rfind("\n")
    assert fleet.problems[0].startswith(
        f"<stdin>:{line}: truncated JSON document (column {column}:")


def test_json_lines_of_reports_and_events_interleaved() -> None:
    e1 = event_lines(report("gpu001", "a" * 32))
    e2 = event_lines(report("gpu002", "b" * 32))
    mixed = [x for pair in zip(e1, e2, strict=True) for x in pair]
    lines = [json.dumps(report("gpu003")), *mixed]
    fleet = collect(["-"], stdin=io.StringIO("\n".join(lines) + "\n"))
    assert not fleet.problems
    assert fleet.node_count == 3
    assert fleet.names(fleet.groups[0].nodes) == ["gpu001", "gpu002", "gpu003"]


def test_events_without_their_summary_are_a_truncated_stream() -> None:
    lines = event_lines(report("gpu001"))[:-1] + event_lines(report("gpu002"))
    fleet = collect(["-"], stdin=io.StringIO("\n".join(lines) + "\n"))
    assert fleet.node_count == 1
    assert len(fleet.problems) == 1
    assert "gpu001" in fleet.problems[0] and "truncated stream" in fleet.problems[0]


def test_foreign_and_broken_documents(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text("[1, 2]\n")
    (tmp_path / "other.json").write_text('{"hello": "world"}\n')
    bad = report("gpu001")
    bad["results"][0]["status"] = "maybe"
    (tmp_path / "status.json").write_text(json.dumps(bad))
    bad_name = report("gpu002")
    bad_name["host"]["hostname"] = "evil[1-9]"
    (tmp_path / "name.json").write_text(json.dumps(bad_name))
    (tmp_path / "deep.json").write_text("{\"a\":" * 100_000 + "1" + "}" * 100_000)
    (tmp_path / "latin1.json").write_bytes(b'{"a": "\xe9"}')
    write(tmp_path / "ok", [report("gpu003")])
    fleet = collect([str(tmp_path)])
    assert fleet.node_count == 1
    msgs = "\n".join(fleet.problems)
    assert len(fleet.problems) == 6, msgs
    assert "list.json: not a usable aiaudit JSON report: not a JSON object" in msgs
    assert "other.json: not a usable aiaudit JSON report: schema_version" in msgs
    assert "status.json: not a usable aiaudit JSON report: results/0/status: 'maybe'" in msgs
    assert "name.json: not a usable aiaudit JSON report: host/hostname" in msgs
    assert "deep.json: JSON nested too deeply" in msgs
    assert "latin1.json: not UTF-8 text (byte 7)" in msgs


def test_reports_tolerate_unknown_fields() -> None:
    d = report("gpu001")
    d["ruleset"]["path"] = "/etc/aiaudit/site.yaml"
    d["future"] = {"x": 1}
    d["host"]["gpu_driver"] = "550.54.15"
    d["results"][0]["new_field"] = [1, 2]
    del d["results"][1]["subject"]
    fleet = collect(["-"], stdin=io.StringIO(json.dumps(d) + "\n"))
    assert not fleet.problems
    assert fleet.groups[0].group.ruleset_source == "/etc/aiaudit/site.yaml"


def test_an_oversized_line_is_skipped_not_held(monkeypatch) -> None:
    from aiaudit.fleet import bounds

    monkeypatch.setattr(bounds, "MAX_DOCUMENT", 1000)
    monkeypatch.setattr(bounds, "CHUNK", 100)
    docs = _docs('{"a": "' + "x" * 5000 + '"}\n{"b": 1}\n')
    assert len(docs) == 2
    assert isinstance(docs[0], InputProblem) and "larger than" in docs[0].message
    assert isinstance(docs[1], Document) and docs[1].origin == "<stdin>:2"


def test_worker_processes_give_the_same_fleet(tmp_path: Path, monkeypatch) -> None:
    from aiaudit.fleet import collect as collect_mod

    monkeypatch.setattr(collect_mod, "MIN_PARALLEL", 1)
    monkeypatch.setattr(collect_mod, "BATCH", 3)
    paths = write(tmp_path / "r", [report(f"gpu{i:02d}", f"{i:032x}",
                                          results={"SYSCTL-VM-SWAPPINESS": ("fail", str(i % 3))})
                                   for i in range(1, 12)])
    paths[4].write_text("{")
    ev = event_lines(report("ev01")) + event_lines(report("ev02"))[:-1]
    stream = "\n".join([*ev, json.dumps(report("st01"))]) + "\n"
    args = [str(tmp_path / "r"), "-", str(tmp_path / "missing.json")]
    one = collect(args, stdin=io.StringIO(stream), jobs=1)
    two = collect(args, stdin=io.StringIO(stream), jobs=2)
    assert one == two
    assert one.node_count == 12 and len(one.problems) == 3
