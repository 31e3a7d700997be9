"""Issue 25, severity poisoning: a rule's severity comes from the ruleset the fleet is
judged by, never from a report; a report that disagrees is a problem line."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiaudit.core.errors import AuditError
from aiaudit.fleet import bounds
from aiaudit.fleet.aggregate import aggregate
from aiaudit.fleet.authority import REPORTS, Judges
from aiaudit.fleet.extract import from_report
from aiaudit.fleet.gate import exit_code
from aiaudit.fleet.model import Fleet
from tests.fleet.hostile import SWAP, node
from tests.helpers import cli


def _fleet(reports: list[dict], judges: Judges | None = None) -> Fleet:
    return aggregate((from_report(d, f"{i:02d}.json") for i, d in enumerate(reports)),
                     judges=judges)


def _row(fleet: Fleet, rule: str = SWAP, group: int = 0):
    return next(r for r in fleet.groups[group].rules if r.rule_id == rule)


def _poison(d: dict, severity: str = "info") -> dict:
    for r in d["results"]:
        r["severity"] = severity
    return d


def test_a_report_that_says_info_does_not_lower_a_failing_rule() -> None:
    """The first report read said every rule is info: the fleet passed (exit 1 -> 0)."""
    reports = [_poison(node(1)), node(2, fail=True), node(3)]
    fleet = _fleet(reports)
    assert fleet.groups[0].judged_by == "ruleset dl-training 1.0 (shipped)"
    assert _row(fleet).severity == "medium"
    assert int(exit_code(fleet, "medium")) == 1
    (problem,) = fleet.problems
    assert problem.startswith("00.json: judged by ruleset dl-training 1.0 (shipped): the "
                              "report claims another severity for")
    assert f"{SWAP}: info, the ruleset says medium" in problem


def test_an_honest_fleet_with_a_poisoned_report_is_incomplete_not_clean() -> None:
    fleet = _fleet([_poison(node(1)), node(2)])
    assert int(exit_code(fleet, "medium")) == 5


def test_results_of_rules_the_ruleset_does_not_have_are_not_counted() -> None:
    d = node(1)
    d["results"].append({**d["results"][0], "rule_id": "EVIL-RULE", "status": "fail",
                         "severity": "critical"})
    fleet = _fleet([d, node(2)])
    assert all(r.rule_id != "EVIL-RULE" for r in fleet.groups[0].rules)
    assert "has results of 1 rule(s) the ruleset does not have (EVIL-RULE)" \
        in fleet.problems[0]
    assert int(exit_code(fleet, "medium")) == 5


def _site(tmp_path: Path, severity: str) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text("ruleset: site\nversion: \"2\"\nextends: dl-training\noverrides:\n"
                    f"  {SWAP}: {{severity: {severity}}}\n")
    return path


def _as_site(d: dict) -> dict:
    d["ruleset"] = {"name": "site", "version": "2", "source": "/etc/aiaudit/site.yaml"}
    return d


def test_the_ruleset_given_judges_its_reports(tmp_path: Path) -> None:
    judges = Judges([str(_site(tmp_path, "critical"))])
    fleet = _fleet([_as_site(node(1, fail=True)), _as_site(node(2))], judges)
    assert fleet.groups[0].judged_by.startswith("--ruleset ")
    assert _row(fleet).severity == "critical"
    assert int(exit_code(fleet, "high")) == 1
    assert len(fleet.problems) == 2  # both reports said medium
    assert not fleet.notices


def test_without_a_ruleset_the_highest_claim_counts_and_disagreement_is_named() -> None:
    honest = [_as_site(node(i, fail=i == 2)) for i in (1, 2, 3)]
    fleet = _fleet(honest)
    assert fleet.groups[0].judged_by == REPORTS
    assert not fleet.problems and _row(fleet).severity == "medium"
    poisoned = [_poison(_as_site(node(1))), *honest[1:]]
    fleet = _fleet(poisoned)
    assert _row(fleet).severity == "medium"  # a report can raise, never lower
    assert int(exit_code(fleet, "medium")) == 1
    (problem,) = fleet.problems
    assert problem.startswith("reports of site 2 (aiaudit 0.1.0): the reports disagree on "
                              "the severity of")
    assert "reports that claim less: 00.json" in problem and "--ruleset" in problem


def test_a_ruleset_no_report_names_is_a_notice(tmp_path: Path) -> None:
    fleet = _fleet([node(1)], Judges([str(_site(tmp_path, "high"))]))
    assert fleet.notices == ("--ruleset " + str(tmp_path / "site.yaml")
                             + " (site 2): no report names this ruleset and version",)


def test_a_ruleset_that_does_not_load_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("ruleset: x\n")
    with pytest.raises(AuditError):
        Judges([str(bad)])
    reports = tmp_path / "r"
    reports.mkdir()
    (reports / "a.json").write_text("{}")
    res = cli("fleet", str(reports), "--ruleset", str(bad))
    assert res.code == 2 and "bad.yaml" in res.err


def test_too_many_rules_without_a_ruleset_refuse_the_report(monkeypatch) -> None:
    monkeypatch.setattr(bounds, "MAX_RULES", 50)
    fleet = _fleet([_as_site(node(1)), _as_site(node(2))])
    assert fleet.reports == 0 and len(fleet.problems) == 2
    assert "more than 50" in fleet.problems[0]


def test_the_command_line_judges_by_ruleset(tmp_path: Path) -> None:
    reports = tmp_path / "r"
    reports.mkdir()
    for i in (1, 2):
        d = _as_site(node(i, fail=i == 2))
        (reports / f"gpu{i}.json").write_text(__import__("json").dumps(d))
    site = _site(tmp_path, "low")
    assert cli("fleet", str(reports)).code == 1
    res = cli("fleet", str(reports), "--ruleset", str(site))
    assert res.code == 5  # low: below --fail-on medium; the reports said medium
    assert "the ruleset's counts" in res.err
    assert "severities: --ruleset" in res.out
