"""A check that yields a malformed result costs its own rule only: the runner makes it an
``error`` result naming the rule, the check and its plugin, and what was wrong, and every
reporter still renders the scan (aiaudit.core.wellformed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from aiaudit.api import CheckContext, CheckSpec
from aiaudit.core import plugins, ruleset
from aiaudit.core.errors import ExitCode
from aiaudit.core.host import Host
from aiaudit.core.model import (
    Aspect,
    Evidence,
    HostInfo,
    Remediation,
    Result,
    RuleInfo,
    Severity,
    Snippet,
    SnippetKind,
    Status,
)
from aiaudit.core.ruleset import Rule, Ruleset
from aiaudit.core.scan import ScanOptions, exit_status, scan
from aiaudit.core.serialize import run_dict, run_from_dict
from aiaudit.core.wellformed import MAX_DATA_DEPTH, result_problem
from tests.helpers import FIXTURES

PLUGIN_DIST = FIXTURES / "plugins" / "malformed"
PLUGIN_RULESET = FIXTURES / "plugins" / "malformed.yaml"
REPORTERS = ("text", "json", "sarif", "junit", "html", "prometheus", "events")
"""Every built-in reporter (tests/reporters/test_golden.py covers each with golden files)."""

GOOD = Result(Status.FAIL, "vm.swappiness", "60, expected <= 10", expected="<= 10",
              actual="60", aspect=Aspect.RUNTIME,
              evidence=(Evidence.runtime("/proc/sys/vm/swappiness", "60"),
                        Evidence.file("/etc/sysctl.conf", 3, "vm.swappiness = 60")),
              remediation=Remediation("Set it.", (
                  Snippet.file("/etc/sysctl.d/99-x.conf", "vm.swappiness = 10\n", mode=0o600),
                  Snippet.command("sysctl -w vm.swappiness=10"))),
              data={"fields": [1, 2.5, None, True, "x"], "nested": {"a": {"b": ()}}})


def _snippet(**kw: object) -> Result:
    return replace(GOOD, remediation=Remediation("Fix.", (replace(
        Snippet.file("/etc/x.conf", "x\n"), **kw),)))


@pytest.mark.parametrize(("result", "words"), [
    ({"status": "pass"}, "a dict, not a Result"),
    (replace(GOOD, status="fail"), "status is a str ('fail'), not a Status"),
    (replace(GOOD, status=Status.WAIVED), "status is waived"),
    (replace(GOOD, subject=3), "subject is an int, not a str"),
    (replace(GOOD, message=None), "message is a NoneType"),
    (replace(GOOD, expected=10), "expected is an int, not a str or None"),
    (replace(GOOD, aspect="runtime"), "aspect is a str, not an Aspect"),
    (replace(GOOD, evidence=[Evidence.runtime("/proc/x")]), "evidence is a list"),
    (replace(GOOD, evidence=("/proc/x",)), "evidence[0] is a str, not an Evidence"),
    (replace(GOOD, evidence=(Evidence("x", kind="sysfs"),)), "evidence[0]: kind 'sysfs'"),
    (replace(GOOD, evidence=(Evidence("x", line=0),)), "evidence[0]: line 0"),
    (replace(GOOD, evidence=(Evidence(source=b"x"),)), "evidence[0]: source, value or path"),
    (replace(GOOD, remediation="set it"), "remediation is a str, not a Remediation"),
    (replace(GOOD, remediation=Remediation("Fix.", ["echo"])), "snippets is a list"),
    (replace(GOOD, remediation=Remediation("Fix.", ("echo",))),
     "remediation snippets[0]: a str, not a Snippet"),
    (replace(GOOD, remediation=Remediation(None)), "remediation summary is a NoneType"),
    (_snippet(kind="file"), "snippets[0]: kind is a str ('file'), not a SnippetKind"),
    (_snippet(path=None), "snippets[0]: a file snippet without a path"),
    (_snippet(mode="0644"), "snippets[0]: mode '0644' is not a file mode"),
    (_snippet(mode=0o10000), "snippets[0]: mode 4096 is not a file mode"),
    (_snippet(content=b"x"), "snippets[0]: content or description is not a str"),
    (replace(GOOD, data=[1]), "data is a list, not a mapping"),
    (replace(GOOD, data={"a": {1, 2}}), "data holds a set, which JSON cannot"),
    (replace(GOOD, data={"a": [float("nan")]}), "data holds the number nan"),
    (replace(GOOD, data={("a", "b"): 1}), "a key JSON cannot write"),
])
def test_malformed_results_are_named(result: object, words: str) -> None:
    problem = result_problem(result)
    assert problem is not None and words in problem, problem


def test_well_formed_results_pass() -> None:
    assert result_problem(GOOD) is None
    assert result_problem(Result(Status.SKIP, "x", "not applicable")) is None
    assert result_problem(replace(GOOD, remediation=Remediation("Fix.", (
        Snippet.enable("x.service"), Snippet.mask("y.service"), Snippet.apply("sshd"),
        Snippet.edit("/etc/fstab", "comment-swap"))))) is None


def test_data_nesting_is_bounded() -> None:
    deep: dict[str, object] = {}
    inner = deep
    for _ in range(MAX_DATA_DEPTH + 5):
        inner["a"] = {}
        inner = inner["a"]  # type: ignore[assignment]
    problem = result_problem(replace(GOOD, data=deep))
    assert problem is not None and "nested deeper" in problem


# ------------------------------------------------------------------ in the runner
def _run(fn) -> Result:
    spec = CheckSpec(id="test.bad", title="bad", run=fn)
    rs = Ruleset("t", "1", "", (Rule(RuleInfo("R-BAD", spec.id, Severity.HIGH, "bad"), spec, {}),))
    info = HostInfo("h", None, None, None, None, None, "/", "offline")
    run = scan(rs, Host("/", live=False), ScanOptions(), host_info=lambda h: info)
    (finding,) = run.findings
    return finding.result


def test_a_built_in_check_yielding_a_malformed_result_is_an_error() -> None:
    def bad(ctx: CheckContext):
        yield GOOD
        yield replace(GOOD, status="fail")

    r = _run(bad)
    assert r.status is Status.ERROR
    assert r.message.startswith("rule R-BAD: check test.bad returned an invalid result: "
                                "status is a str ('fail'), not a Status: Result(")


@pytest.fixture
def malformed_registry(monkeypatch: pytest.MonkeyPatch) -> plugins.Registry:
    monkeypatch.syspath_prepend(str(PLUGIN_DIST))
    import aiaudit_malformed

    return plugins.build_registry(entry_points=False, extra=[aiaudit_malformed])


def test_third_party_malformed_results_cost_their_rule_and_every_reporter_renders(
        malformed_registry: plugins.Registry, tmp_path: Path) -> None:
    rs = ruleset.load(str(PLUGIN_RULESET), malformed_registry)
    (tmp_path / "etc").mkdir()
    run = scan(rs, Host(str(tmp_path), live=False), ScanOptions(rule_timeout=10))
    by = {f.rule_id: f.result for f in run.findings}
    origin = "plugin object extra-0 (aiaudit_malformed)"
    expect = {"M-STATUS-STR": "status is a str ('fail'), not a Status",
              "M-SNIPPET-STR": "remediation snippets[0]: a str, not a Snippet",
              "M-SNIPPET-KIND": "remediation snippets[0]: kind is a str ('file'), not a "
                                "SnippetKind"}
    for rid, words in expect.items():
        r = by[rid]
        assert r.status is Status.ERROR
        assert r.message.startswith(f"rule {rid}: check malformed.") and origin in r.message
        assert f"returned an invalid result: {words}" in r.message, r.message
    assert by["M-GOOD"].status is Status.FAIL
    assert exit_status(run, Severity.HIGH) == ExitCode.NOT_EVALUATED
    for name in REPORTERS:
        text = malformed_registry.reporters[name].render(run, {})
        assert text and "M-STATUS-STR" in text, name
    doc = json.loads(malformed_registry.reporters["json"].render(run, {}))
    jsonschema.validate(doc, ruleset.schema("report.schema.json"))
    assert run_dict(run_from_dict(doc)) == doc  # a saved report reads back the same
    (good,) = [x for x in doc["results"] if x["rule_id"] == "M-GOOD"]
    assert good["remediation"]["snippets"] == [
        {"kind": "file", "path": "/etc/x.conf", "mode": "0600", "content": "x = 1\n"}]


def test_scan_of_a_malformed_plugin_exits_normally_with_every_report(tmp_path: Path) -> None:
    """The command line, with the plugin installed (an entry point on PYTHONPATH): the
    scan exits 3 (a rule could not be evaluated), writes every report, no traceback."""
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    outs = {name: tmp_path / f"report.{name}" for name in REPORTERS}
    path = os.pathsep.join(filter(None, [str(PLUGIN_DIST), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "aiaudit", "scan", "--root", str(root), "--offline",
         "--ruleset", str(PLUGIN_RULESET), "--fail-on", "high",
         *(a for name, f in outs.items() for a in ("-o", f"{name}:{f}"))],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert proc.returncode == ExitCode.NOT_EVALUATED, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "invalid result" in outs["text"].read_text(encoding="utf-8")
    for name, f in outs.items():
        assert "M-SNIPPET-KIND" in f.read_text(encoding="utf-8"), name
    by = {x["rule_id"]: x for x in json.loads(outs["json"].read_text())["results"]}
    for rid in ("M-STATUS-STR", "M-SNIPPET-STR", "M-SNIPPET-KIND"):
        assert by[rid]["status"] == "error"
        assert "aiaudit-malformed 0.1" in by[rid]["message"], by[rid]["message"]
    assert by["M-GOOD"]["status"] == "fail"


def test_snippet_kind_is_a_str_enum() -> None:
    s = Snippet.file("/etc/x", "x\n")
    assert s.kind is SnippetKind.FILE and s.kind == "file" and str(s.kind) == "file"
    assert s.mode == 0o644 and Snippet.file("/etc/x", "x\n", mode=0o600).mode == 0o600
    assert json.dumps(s.kind) == '"file"'
