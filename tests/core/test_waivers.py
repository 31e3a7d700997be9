"""Waivers: the file format (every problem with file:line:col), matching, expiry and the
notices that keep stale waivers from piling up, and how waived results reach the reports."""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from aiaudit.core.errors import RulesetError
from aiaudit.core.model import Status, Waiver
from aiaudit.core.waivers import apply_waivers, load_waivers, parse_waivers
from tests.helpers import cli
from tests.modes_support import HOST, finding, scripted  # noqa: F401

GOOD = """\
description: accepted exceptions for the gpu-a fleet
waivers:
  - rule: SYSCTL-NET-IPV4-TCP-TW-REUSE
    reason: vendor image sets 2 until the next rebuild
    owner: platform-team
    expires: 2026-01-31
  - rule: SSH-*
    subject: "Match*"
    host: "gpu-a*"
    reason: bastion-only match blocks
    owner: alice
    expires: "2027-12-31"
"""


def test_parse_good_file() -> None:
    ws = parse_waivers(GOOD, "w.yaml")
    assert ws[0] == Waiver(rule="SYSCTL-NET-IPV4-TCP-TW-REUSE",
                           reason="vendor image sets 2 until the next rebuild",
                           owner="platform-team", expires="2026-01-31", source="w.yaml:3:5")
    # an unquoted YAML date and a quoted one both become the ISO text
    assert ws[1].expires == "2027-12-31"
    assert (ws[1].subject, ws[1].host, ws[1].source) == ("Match*", "gpu-a*", "w.yaml:7:5")


BAD = """\
waivers:
  - rule: SYSCTL-VM-SWAPPINESS
    owner: bob
    expires: 2026-02-30
  - rule: "*"
    reason: silence everything
    owner: bob
    expires: 2026-01-01
    colour: red
  - rule: SYSCTL-VM-SWAPPINESS
    reason: twice
    reason: again
    owner: bob
    expires: 2026-13-01
"""


def test_every_problem_reported_with_position() -> None:
    with pytest.raises(RulesetError) as ei:
        parse_waivers(BAD, "w.yaml")
    problems = ei.value.problems
    text = "\n".join(problems)
    assert "w.yaml:12:5: duplicate key 'reason'" in text
    assert any(p.startswith("w.yaml:2:5:") and "'reason' is a required property" in p
               for p in problems), text
    assert any(p.startswith("w.yaml:5:11: waivers/1/rule") for p in problems), text
    assert any(p.startswith("w.yaml:5:5: waivers/1: unknown key(s) ('colour'")
               for p in problems), text
    # schema problems stop before the calendar check: fix those first, then dates
    fixed = BAD.replace("  - rule: \"*\"\n", "  - rule: X-*\n").replace("    colour: red\n", "")
    fixed = fixed.replace("    owner: bob\n    expires: 2026-02-30",
                          "    reason: r-one\n    owner: bob\n    expires: 2026-02-30")
    fixed = fixed.replace("    reason: again\n", "")
    with pytest.raises(RulesetError) as ei:
        parse_waivers(fixed, "w.yaml")
    text = "\n".join(ei.value.problems)
    assert "w.yaml:5:14: waivers/0/expires: '2026-02-30' is not a calendar date" in text
    assert "waivers/2/expires: '2026-13-01' is not a calendar date" in text
    assert "same rule, subject and host as the waiver at w.yaml:2:5" in text


@pytest.mark.parametrize("text,expect", [
    ("waivers: [\n  {rule: A", "w.yaml:3:1: invalid YAML"),      # syntax, with position
    ("- rule: A\n", "w.yaml:1:1: a waiver file must be a mapping"),
    ("{}\n", "'waivers' is a required property"),
    ("waivers:\n  - rule: A\n    reason: ok ok\n    owner: o\n    expires: 2026-01-01 10:00\n",
     "w.yaml:5:14: waivers/0/expires"),                           # a timestamp, not a date
])
def test_malformed_files(text: str, expect: str) -> None:
    with pytest.raises(RulesetError) as ei:
        parse_waivers(text, "w.yaml")
    assert expect in "\n".join(ei.value.problems)


def test_cli_bad_waiver_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "w.yaml"
    bad.write_text(BAD)
    r = cli("scan", "--root", str(tmp_path), "--waivers", str(bad))
    assert r.code == 2
    assert r.out == ""
    assert f"aiaudit: error: {bad}:12:5: duplicate key 'reason'" in r.err
    r = cli("scan", "--root", str(tmp_path), "--waivers", str(tmp_path / "missing.yaml"))
    assert r.code == 2 and "cannot read waiver file" in r.err


def test_load_waivers_reads_file(tmp_path: Path) -> None:
    p = tmp_path / "w.yaml"
    p.write_text(GOOD)
    assert len(load_waivers(str(p))) == 2


# ----------------------------------------------------------------- apply_waivers
def W(rule: str, expires: str = "2030-01-01", **kw: str) -> Waiver:
    return Waiver(rule=rule, reason="r", owner="o", expires=expires, source=f"w:{rule}", **kw)


def test_waiver_applies_to_failures_only() -> None:
    fs = [finding("A", "fail"), finding("A", "pass", "x"), finding("A", "error", "y")]
    out, notices = apply_waivers(fs, [W("A")], HOST, "2026-06-01", ["A"])
    assert [f.status for f in out] == [Status.WAIVED, Status.PASS, Status.ERROR]
    assert out[0].waiver == W("A") and out[0].result.status is Status.FAIL
    assert notices == []


def test_patterns_rule_subject_host() -> None:
    fs = [finding("SYSCTL-NET-X", "fail", "net.a"), finding("SYSCTL-NET-Y", "fail", "net.b"),
          finding("SYSCTL-VM-Z", "fail", "vm.z")]
    ws = [W("SYSCTL-NET-*", subject="net.a"), W("SYSCTL-VM-?", host="gpu-b*"),
          W("SYSCTL-VM-?", host="gpu-a[0-9]"), W("SYSCTL-NET-Y", "2001-01-01", host="gpu-b*")]
    out, notices = apply_waivers(fs, ws, HOST, "2026-06-01", [f.rule_id for f in fs])
    assert [f.waiver for f in out] == [ws[0], None, ws[2]]
    # the gpu-b waivers do not concern this host: no "unused" or "expired" notice here
    assert notices == []


def test_expiry_is_inclusive_and_reported_with_count() -> None:
    fs = [finding("A", "fail", "s1"), finding("A", "fail", "s2")]
    out, notices = apply_waivers(fs, [W("A", "2026-06-01")], HOST, "2026-06-01", ["A"])
    assert all(f.status is Status.WAIVED for f in out) and notices == []
    out, notices = apply_waivers(fs, [W("A", "2026-06-01")], HOST, "2026-06-02", ["A"])
    assert all(f.status is Status.FAIL for f in out)
    assert notices == ["waiver for A expired on 2026-06-01 (w:A): it no longer applies "
                       "(2 failure(s) no longer waived)"]


def test_later_valid_waiver_still_applies_after_expired_one() -> None:
    ws = [W("A", "2020-01-01"), W("A*", "2030-01-01")]
    out, notices = apply_waivers([finding("A", "fail")], ws, HOST, "2026-06-01", ["A"])
    assert out[0].waiver == ws[1]
    assert len(notices) == 1 and "expired on 2020-01-01" in notices[0]


def test_unused_and_unknown_rule_notices() -> None:
    fs = [finding("A", "pass"), finding("B", "fail")]
    ws = [W("A"), W("TYPO-RULE"), W("B", subject="other")]
    out, notices = apply_waivers(fs, ws, HOST, "2026-06-01", ["A", "B"])
    assert out[1].waiver is None
    assert notices == [
        "waiver for A matched no failure (w:A): remove it if stale",
        "waiver for TYPO-RULE matches no rule of this scan (w:TYPO-RULE): fix the rule id "
        "or remove it",
        "waiver for B subject other matched no failure (w:B): remove it if stale",
    ]


# ----------------------------------------------------------------- end to end
WAIVERS = """\
waivers:
  - rule: GATE-A
    subject: dev0
    reason: replacement card ordered (INC-42)
    owner: hpc-ops
    expires: 2099-12-31
  - rule: GATE-B
    reason: old exception
    owner: hpc-ops
    expires: 2001-01-01
"""


def test_cli_waived_failure_does_not_fail_the_gate(scripted, tmp_path: Path) -> None:  # noqa: F811
    rs = scripted({"GATE-A": ("high", [{"status": "fail", "subject": "dev0"}]),
                   "GATE-B": ("low", [{"status": "fail", "subject": "x"}])})
    wf = tmp_path / "w.yaml"
    wf.write_text(WAIVERS)
    r = cli("scan", "--ruleset", str(rs), "--root", str(tmp_path), "--fail-on", "high")
    assert r.code == 1
    r = cli("scan", "--ruleset", str(rs), "--root", str(tmp_path), "--fail-on", "high",
            "--waivers", str(wf), "--format", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    a = next(x for x in doc["results"] if x["rule_id"] == "GATE-A")
    assert (a["status"], a["check_status"]) == ("waived", "fail")
    assert a["waiver"] == {"rule": "GATE-A", "subject": "dev0",
                           "reason": "replacement card ordered (INC-42)", "owner": "hpc-ops",
                           "expires": "2099-12-31", "source": f"{wf}:2:5"}
    b = next(x for x in doc["results"] if x["rule_id"] == "GATE-B")
    assert b["status"] == "fail" and "waiver" not in b
    assert any("GATE-B expired on 2001-01-01" in n for n in doc["notices"])
    assert doc["summary"]["by_status"]["waived"] == 1
    # the json report with waivers stays valid against the report schema
    import jsonschema

    from aiaudit.core.ruleset import schema
    jsonschema.validate(doc, schema("report.schema.json"))
    text = cli("scan", "--ruleset", str(rs), "--root", str(tmp_path), "--waivers", str(wf))
    assert "waived: replacement card ordered (INC-42) (owner hpc-ops, expires 2099-12-31)" \
        in text.out
    assert "GATE-B expired on 2001-01-01" in text.out


def test_schema_is_valid_and_example_file_loads() -> None:
    import jsonschema

    from aiaudit.core.ruleset import schema
    from tests.modes_support import REPO

    jsonschema.Draft202012Validator.check_schema(schema("waiver.schema.json"))
    ws = load_waivers(str(REPO / "examples" / "waivers.yaml"))
    assert [w.rule for w in ws] == ["SYSCTL-NET-IPV4-TCP-TW-REUSE",
                                    "SYSCTL-KERNEL-NUMA-BALANCING", "SYSCTL-NET-CORE-*"]
    # every example waiver names a rule of the shipped ruleset
    r = cli("rules")
    ids = [line.split()[0] for line in r.out.splitlines()[1:]]
    assert all(any(fnmatchcase(i, w.rule) for i in ids) for w in ws)
