"""``--changes-since`` / ``--state``: only status changes are reported, the exit code still
reflects the whole scan, and a bad previous scan is a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiaudit.core.model import Status
from aiaudit.core.serialize import run_dict, run_from_dict
from aiaudit.modes.changes import changes_since, classify, diff, keyed
from tests.helpers import cli
from tests.modes_support import finding, run_of, scripted  # noqa: F401

P, F, E, S, W = (Status.PASS, Status.FAIL, Status.ERROR, Status.SKIP, Status.WAIVED)


@pytest.mark.parametrize("before,after,kind", [
    (None, F, "added"), (P, F, "added"), (W, F, "added"), (E, F, "added"), (S, F, "added"),
    (F, P, "fixed"), (F, S, "fixed"),
    (F, W, "changed"), (F, E, "changed"), (P, E, "changed"), (E, P, "changed"),
    (None, P, "changed"), (None, E, "changed"),
    (F, F, None), (P, P, None), (W, W, None), (E, E, None),
])
def test_classify(before: Status | None, after: Status, kind: str | None) -> None:
    assert classify(before, after) == kind


def test_key_is_rule_and_subject_with_occurrence() -> None:
    fs = [finding("A", "pass", "x"), finding("A", "fail", "x"), finding("A", "pass", "y")]
    assert list(keyed(fs)) == [("A", "x", 0), ("A", "x", 1), ("A", "y", 0)]


def test_diff_and_filtered_run() -> None:
    prev = run_of([finding("A", "fail", "x"), finding("A", "pass", "y"),
                   finding("B", "fail", "gone-subject"), finding("C", "pass")], "prev")
    cur = run_of([finding("A", "pass", "x"), finding("A", "fail", "y"),
                  finding("B", "fail", "new-subject"), finding("C", "pass")], "cur")
    changes, gone, unchanged = diff(prev, cur)
    assert [(c.kind, c.finding.rule_id, c.finding.result.subject) for c in changes] == [
        ("fixed", "A", "x"), ("added", "A", "y"), ("added", "B", "new-subject")]
    assert [(f.rule_id, f.result.subject) for f in gone] == [("B", "gone-subject")]
    assert unchanged == 1
    shown = changes_since(cur, prev, "prev.json")
    assert [f.result.data["change"] for f in shown.findings] == [
        {"kind": "fixed", "previous_status": "fail", "previous_run": "prev"},
        {"kind": "added", "previous_status": "pass", "previous_run": "prev"},
        {"kind": "added", "previous_status": None, "previous_run": "prev"},
        {"kind": "gone", "previous_status": "fail", "previous_run": "prev"}]
    closing = shown.findings[-1]
    assert (closing.rule_id, closing.result.subject, closing.status) == \
        ("B", "gone-subject", Status.SKIP)
    assert "no longer reported" in closing.result.message
    # the whole scan's counts beside the change counts
    assert shown.change_summary == {
        "since": "prev.json", "previous_run": "prev", "scan_counts": cur.counts(),
        "changes": {"added": 2, "fixed": 1, "changed": 0, "gone": 1, "unchanged": 1}}
    assert shown.notices == (
        "changes since prev.json (scan of 2026-01-01T00:00:00Z): 2 added, 1 fixed, "
        "0 changed, 1 gone; 1 unchanged result(s) not shown",
        "no longer reported since the previous scan: B gone-subject (was fail)")
    assert shown.rules == cur.rules and shown.host == cur.host


def test_only_open_results_get_a_closing_event() -> None:
    """A gone failure, waiver or error closes something; a gone pass does not."""
    prev = run_of([finding("A", "fail", "l1"), finding("A", "pass", "l2"),
                   finding("A", "error", "l3"), finding("A", "pass", "l4")], "prev")
    cur = run_of([finding("A", "pass", "l4")], "cur")
    shown = changes_since(cur, prev, "prev.json")
    assert [(f.result.subject, f.result.data["change"]["kind"],
             f.result.data["change"]["previous_status"]) for f in shown.findings] == [
        ("l1", "gone", "fail"), ("l3", "gone", "error")]
    assert shown.change_summary["changes"]["gone"] == 2
    assert shown.change_summary["scan_counts"]["pass"] == 1
    # the reduced run round-trips through the JSON report
    back = run_from_dict(json.loads(json.dumps(run_dict(shown))))
    assert back.change_summary == shown.change_summary


def test_rules_not_run_are_not_gone_and_other_host_is_noticed() -> None:
    from dataclasses import replace

    from tests.modes_support import HOST

    prev = run_of([finding("A", "fail"), finding("Z", "fail")], "prev",
                  host=replace(HOST, machine_id="1" * 32, hostname="gpu-b7"))
    cur = run_of([finding("A", "fail")], "cur")
    shown = changes_since(cur, prev, "p.json")
    assert shown.findings == ()
    assert shown.notices[0].startswith("p.json is a scan of another host (gpu-b7")
    assert shown.notices[1].endswith("0 gone; 1 unchanged result(s) not shown; 1 result(s) "
                                     "of rules not run this time not compared")


def test_first_run_reports_everything() -> None:
    cur = run_of([finding("A", "fail"), finding("B", "pass")])
    shown = changes_since(cur, None, "state.json")
    assert [f.result.data["change"]["kind"] for f in shown.findings] == ["added", "changed"]
    assert shown.notices[-1] == ("no previous scan at state.json: every result is reported "
                                 "(1 added, 0 fixed, 1 changed)")


def test_change_data_survives_json_round_trip() -> None:
    shown = changes_since(run_of([finding("A", "fail")]), None, "s")
    back = run_from_dict(json.loads(json.dumps(run_dict(shown))))
    assert back.findings[0].result.data["change"]["kind"] == "added"


# ----------------------------------------------------------------- command line
def _scan(rs: Path, root: Path, *extra: str):
    return cli("scan", "--ruleset", str(rs), "--root", str(root), "--fail-on", "high", *extra)


def test_cli_changes_since(scripted, tmp_path: Path) -> None:  # noqa: F811
    before = scripted({"R-FIX": ("high", [{"status": "fail", "subject": "a"}]),
                       "R-STAY": ("high", [{"status": "fail", "subject": "b"}]),
                       "R-OK": ("high", [{"status": "pass"}])})
    after = scripted({"R-FIX": ("high", [{"status": "pass", "subject": "a"}]),
                      "R-STAY": ("high", [{"status": "fail", "subject": "b"}]),
                      "R-OK": ("high", [{"status": "fail"}])})
    prev = tmp_path / "prev.json"
    first = _scan(before, tmp_path, "--output", f"json:{prev}")
    assert first.code == 1
    r = _scan(after, tmp_path, "--changes-since", str(prev), "--format", "json")
    assert r.code == 1, r.err          # R-STAY and R-OK still fail: the exit code says so
    doc = json.loads(r.out)
    got = {x["rule_id"]: (x["status"], x["data"]["change"]["kind"]) for x in doc["results"]}
    assert got == {"R-FIX": ("pass", "fixed"), "R-OK": ("fail", "added")}
    assert any(n.startswith(f"changes since {prev}") and "1 unchanged" in n
               for n in doc["notices"])
    import jsonschema

    from aiaudit.core.ruleset import schema
    jsonschema.validate(doc, schema("report.schema.json"))
    text = _scan(after, tmp_path, "--changes-since", str(prev)).out
    assert "    - (added, was pass): " in text and "R-OK" in text
    assert "    a (fixed, was fail): " in text and "R-FIX" in text
    # the summary agrees with the exit code: the totals are those of the whole scan
    assert "Changes shown: 2 results (1 added, 1 fixed)" in text
    assert "Summary: 3 rules, 3 results: 2 fail (2 high)" in text
    assert text.rstrip().splitlines()[-1].startswith("Exit code 1 (findings): 2 failures")
    # nothing changed: nothing reported, exit code still 1
    prev2 = tmp_path / "prev2.json"
    _scan(after, tmp_path, "--output", f"json:{prev2}")
    r = _scan(after, tmp_path, "--changes-since", str(prev2), "--format", "json")
    assert r.code == 1 and json.loads(r.out)["results"] == []


def test_cli_state_file_first_and_next_run(scripted, tmp_path: Path) -> None:  # noqa: F811
    rs = scripted({"R1": ("high", [{"status": "pass"}])})
    state = tmp_path / "state" / "last.json"
    r = _scan(rs, tmp_path, "--state", str(state))
    assert r.code == 2 and "the directory does not exist" in r.err
    state.parent.mkdir()
    r = _scan(rs, tmp_path, "--state", str(state), "--format", "json")
    assert r.code == 0
    assert [x["data"]["change"]["kind"] for x in json.loads(r.out)["results"]] == ["changed"]
    saved = json.loads(state.read_text())
    assert "change" not in saved["results"][0].get("data", {})   # full, unfiltered scan
    r = _scan(rs, tmp_path, "--state", str(state), "--format", "json")
    assert json.loads(r.out)["results"] == []
    assert json.loads(state.read_text())["run_id"] != saved["run_id"]
    assert [p.name for p in state.parent.iterdir()] == ["last.json"]  # no temp files left


@pytest.mark.parametrize("content,message", [
    (None, "cannot read previous scan"),
    ("{not json", ":1:2: not a JSON scan report"),
    ('{"type": "event"}\n', "not an aiaudit JSON scan report"),
    ("[]", "not an aiaudit JSON scan report: (top)"),
])
def test_cli_bad_previous_scan_exits_2(scripted, tmp_path: Path, content: str | None,  # noqa: F811
                                       message: str) -> None:
    rs = scripted({"R1": ("high", [{"status": "pass"}])})
    prev = tmp_path / "prev.json"
    if content is not None:
        prev.write_text(content)
    r = _scan(rs, tmp_path, "--changes-since", str(prev))
    assert r.code == 2 and r.out == ""
    assert message in r.err, r.err


def test_cli_changes_since_and_state_exclusive(tmp_path: Path) -> None:
    r = cli("scan", "--root", str(tmp_path), "--changes-since", "a", "--state", "b")
    assert r.code == 2 and "not allowed with argument" in r.err
