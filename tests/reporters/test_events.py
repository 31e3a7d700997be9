"""SIEM events: one JSON line per result plus a summary, valid against
``schemas/event.schema.json``."""

from __future__ import annotations

import json

import pytest

from aiaudit.core.ruleset import schema
from aiaudit.reporters import events
from tests.modes_support import scripted  # noqa: F401
from tests.reporters.samples import SAMPLES, mixed_run
from tests.reporters.scans import FIXTURE_ROOT, scan_root


def validator():
    import jsonschema

    doc = schema("event.schema.json")
    jsonschema.Draft202012Validator.check_schema(doc)
    return jsonschema.Draft202012Validator(doc)


def lines(run) -> list[dict]:
    text = events.render(run, {})
    assert text.endswith("\n")
    return [json.loads(ln) for ln in text.splitlines()]


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_every_event_validates(sample: str) -> None:
    v = validator()
    evs = lines(SAMPLES[sample]())
    for ev in evs:
        errors = list(v.iter_errors(ev))
        assert not errors, errors[0].message
    assert evs[-1]["event"] == "summary"
    assert len(evs) == len(SAMPLES[sample]().findings) + 1


def test_real_scan_validates() -> None:
    v = validator()
    run = scan_root(FIXTURE_ROOT)
    evs = lines(run)
    assert all(not list(v.iter_errors(ev)) for ev in evs)
    assert {ev["run_id"] for ev in evs} == {run.run_id}


def test_schema_rejects_bad_events() -> None:
    v = validator()
    ev = lines(mixed_run())[0]
    assert list(v.iter_errors({**ev, "status": "bogus"}))
    assert list(v.iter_errors({k: x for k, x in ev.items() if k != "rule"}))
    waived = next(e for e in lines(mixed_run()) if e.get("status") == "waived")
    assert list(v.iter_errors({k: x for k, x in waived.items() if k != "waiver"}))


def test_event_content() -> None:
    evs = {e.get("rule"): e for e in lines(mixed_run())}
    ev = evs["SYSCTL-VM-MAX-MAP-COUNT"]
    assert ev["host"]["hostname"] == "gpu-node-01"
    assert ev["host"]["machine_id"] == "0123456789abcdef0123456789abcdef"
    assert ev["host"]["product_uuid"] == "4c4c4544-0042-3510-8052-b4c04f384d32"
    assert (ev["timestamp"], ev["ruleset"], ev["severity"], ev["status"], ev["subject"]) == \
        ("2026-01-02T03:04:05Z", "dl-training", "medium", "fail", "vm.max_map_count")
    assert ev["evidence"][1] == {"source": "etc/sysctl.d/60-x.conf:2", "kind": "file",
                                 "path": "/etc/sysctl.d/60-x.conf", "line": 2,
                                 "value": "vm.max_map_count = 262144"}
    assert "waiver" not in ev
    w = evs["SYSCTL-KERNEL-NUMA-BALANCING"]
    assert w["status"] == "waived" and w["waiver"]["owner"] == "ops-team"
    s = evs[None]
    assert s["counts"] == {"pass": 1, "fail": 2, "error": 1, "skip": 1, "waived": 1}


def test_one_line_per_event_even_with_line_feeds() -> None:
    text = events.render(mixed_run(), {})
    assert len(text.splitlines()) == len(mixed_run().findings) + 1
    assert "\\n" in text  # the line feed in a message is escaped, not raw


def test_changes_run_events_carry_change_and_whole_scan_counts(
        scripted, tmp_path) -> None:  # noqa: F811
    """--state on an hourly timer: a listener that goes away gets a closing ``gone`` event;
    the summary gives the whole scan's counts (the host still fails) and the change counts
    apart; a run with no change still says how many failures the host has."""
    from tests.helpers import cli

    before = scripted({"NET-PORTS": ("high", [{"status": "fail", "subject": "6006/tcp"},
                                              {"status": "fail", "subject": "8888/tcp"}]),
                       "R-STAY": ("high", [{"status": "fail", "subject": "b"}])})
    after = scripted({"NET-PORTS": ("high", [{"status": "fail", "subject": "8888/tcp"}]),
                      "R-STAY": ("high", [{"status": "fail", "subject": "b"}])})
    state = tmp_path / "state.json"
    args = ("--root", str(tmp_path), "--state", str(state), "--format", "events")
    first = cli("scan", "--ruleset", str(before), *args)
    assert first.code == 1
    evs = [json.loads(ln) for ln in first.out.splitlines()]
    assert {(e["subject"], e["change"], e["previous_status"]) for e in evs[:-1]} == {
        ("6006/tcp", "added", None), ("8888/tcp", "added", None), ("b", "added", None)}
    r = cli("scan", "--ruleset", str(after), *args)
    assert r.code == 1
    v = validator()
    evs = [json.loads(ln) for ln in r.out.splitlines()]
    for ev in evs:
        assert not list(v.iter_errors(ev)), next(iter(v.iter_errors(ev))).message
    closing, summary = evs[:-1], evs[-1]
    assert [(e["rule"], e["subject"], e["change"], e["previous_status"], e["status"])
            for e in closing] == [("NET-PORTS", "6006/tcp", "gone", "fail", "skip")]
    assert summary["counts"]["fail"] == 2             # the whole scan: what exit 1 means
    assert summary["changes"] == {"added": 0, "fixed": 0, "changed": 0, "gone": 1,
                                  "unchanged": 2}
    r = cli("scan", "--ruleset", str(after), *args)
    evs = [json.loads(ln) for ln in r.out.splitlines()]
    assert len(evs) == 1 and evs[0]["counts"]["fail"] == 2
    assert evs[0]["changes"]["unchanged"] == 2 and evs[0]["changes"]["gone"] == 0


def test_plain_run_events_have_null_change() -> None:
    evs = lines(mixed_run())
    assert all(e["change"] is None and e["previous_status"] is None for e in evs[:-1])
    assert "changes" not in evs[-1]
