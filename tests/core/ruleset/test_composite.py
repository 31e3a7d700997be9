"""Composite rules (``any_of`` / ``all_of``): binding, validation with positions, verdicts
and which parts decided."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiaudit.core import plugins, ruleset
from aiaudit.core.errors import RulesetError
from aiaudit.core.host import Host
from aiaudit.core.model import Status
from aiaudit.core.scan import ScanOptions, scan
from tests.helpers import build_root, cli

REG = plugins.registry()

ACCESS = """\
ruleset: site
version: 1
rules:
  - id: SSH-ACCESS-LISTS
    severity: medium
    title: Ensure SSH access is limited to listed users or groups
    any_of:
      - name: AllowUsers
        check: ssh.sshd_option
        params: {keyword: AllowUsers, op: ne, value: ""}
      - {name: AllowGroups, check: ssh.sshd_option, params: {keyword: AllowGroups, op: ne,
                                                             value: ""}}
      - {name: DenyUsers, check: ssh.sshd_option, params: {keyword: DenyUsers, op: ne, value: ""}}
      - {name: DenyGroups, check: ssh.sshd_option, params: {keyword: DenyGroups, op: ne,
                                                            value: ""}}
  - id: SSH-AUTH-TIGHT
    severity: high
    title: Ensure SSH authentication is tight
    all_of:
      - {name: tries, check: ssh.sshd_option, params: {keyword: MaxAuthTries, min: 1, max: 4}}
      - name: root
        check: ssh.sshd_option
        params: {keyword: PermitRootLogin, op: eq, value: "no"}
      - any_of:
          - {check: ssh.sshd_option, params: {keyword: PasswordAuthentication, op: eq, value: "no"}}
          - {check: ssh.sshd_option, params: {keyword: UsePAM, op: eq, value: "no"}}
"""


def _write(tmp_path: Path, text: str) -> str:
    f = tmp_path / "site.yaml"
    f.write_text(text)
    return str(f)


def _run(tmp_path: Path, sshd: str | None) -> dict:
    rs = ruleset.load(_write(tmp_path, ACCESS), REG)
    files = {} if sshd is None else {"/etc/ssh/sshd_config": sshd}
    root = build_root(tmp_path / "root", files)
    run = scan(rs, Host(str(root), live=False), ScanOptions())
    return {f.rule_id: f.result for f in run.findings}


def test_any_of_passes_by_the_part_that_holds(tmp_path: Path) -> None:
    res = _run(tmp_path, "AllowGroups admins\nMaxAuthTries 3\nPermitRootLogin no\n"
                         "PasswordAuthentication no\n")
    r = res["SSH-ACCESS-LISTS"]
    assert r.status is Status.PASS
    assert r.data["decided_by"] == ["AllowGroups"]
    assert "AllowGroups holds" in r.message
    assert r.evidence[0].source == "etc/ssh/sshd_config:1"
    assert [p["status"] for p in r.data["parts"]] == ["fail", "pass", "fail", "fail"]
    assert res["SSH-AUTH-TIGHT"].status is Status.PASS


def test_any_of_fails_when_no_part_holds(tmp_path: Path) -> None:
    res = _run(tmp_path, "MaxAuthTries 3\nPermitRootLogin no\nUsePAM no\n")
    r = res["SSH-ACCESS-LISTS"]
    assert r.status is Status.FAIL
    assert r.data["decided_by"] == ["AllowUsers", "AllowGroups", "DenyUsers", "DenyGroups"]
    assert r.remediation is not None and r.remediation.summary.startswith("Make one part hold")
    # nested any_of: UsePAM no holds though PasswordAuthentication is yes
    assert res["SSH-AUTH-TIGHT"].status is Status.PASS


def test_all_of_names_the_failing_parts(tmp_path: Path) -> None:
    res = _run(tmp_path, "Include /etc/ssh/sshd_config.d/*.conf\nMaxAuthTries 6\n"
                         "PermitRootLogin no\nUsePAM yes\n")
    r = res["SSH-AUTH-TIGHT"]
    assert r.status is Status.FAIL
    assert r.data["decided_by"] == ["tries", "any of #3"]
    assert "tries, any of #3 fail" in r.message
    # one drop-in holding both lines, one reload
    assert [(s.kind, s.path, s.content) for s in r.remediation.snippets] == [
        ("file", "/etc/ssh/sshd_config.d/00-aiaudit.conf",
         "MaxAuthTries 4\nPasswordAuthentication no\n"),
        ("apply", None, "sshd")]


def test_skip_and_error_propagate(tmp_path: Path) -> None:
    res = _run(tmp_path, None)  # no sshd: every part skips
    assert res["SSH-ACCESS-LISTS"].status is Status.SKIP
    res = _run(tmp_path, "MaxAuthTries x\n")  # sshd would refuse it: error, not fail
    assert res["SSH-ACCESS-LISTS"].status is Status.ERROR
    assert res["SSH-AUTH-TIGHT"].status is Status.ERROR


@pytest.mark.parametrize("bad,needle", [
    ("      - {check: ssh.sshd_option, params: {keyword: MaxAuthTries, mx: 4}}\n",
     "site.yaml:8:"),
    ("      - {check: no.such_check, params: {}}\n", "unknown check 'no.such_check'"),
    ('      - {check: ssh.sshd_option, params: {keyword: MaxAuthTries, max: 4}, any_of: []}\n',
     "site.yaml:8:"),
])
def test_part_mistakes_are_positioned(tmp_path: Path, bad: str, needle: str) -> None:
    text = ("ruleset: site\nversion: 1\nrules:\n  - id: X-ONE\n    severity: low\n"
            "    title: Ensure x\n    any_of:\n" + bad)
    with pytest.raises(RulesetError) as exc:
        ruleset.load(_write(tmp_path, text), REG)
    assert needle in str(exc.value)


def test_check_and_any_of_together_is_refused(tmp_path: Path) -> None:
    text = ("ruleset: site\nversion: 1\nrules:\n  - id: X-ONE\n    severity: low\n"
            "    title: Ensure x\n    check: kernel.sysctl\n    any_of:\n"
            "      - {check: kernel.sysctl, params: {key: a.b, op: eq, value: 1}}\n")
    with pytest.raises(RulesetError, match=r"site\.yaml:4"):
        ruleset.load(_write(tmp_path, text), REG)


def test_composite_params_refused(tmp_path: Path) -> None:
    text = ("ruleset: site\nversion: 1\nrules:\n  - id: X-ONE\n    severity: low\n"
            "    title: Ensure x\n    params: {key: 1}\n    all_of:\n"
            "      - {check: kernel.sysctl, params: {key: a.b, op: eq, value: 1}}\n")
    with pytest.raises(RulesetError, match="composite rule has no params"):
        ruleset.load(_write(tmp_path, text), REG)


def test_cli_validate_explain_and_json(tmp_path: Path) -> None:
    path = _write(tmp_path, ACCESS)
    assert cli("validate", path).code == 0
    out = cli("explain", "SSH-AUTH-TIGHT", "--ruleset", path).out
    assert "check: rules.all_of" in out and "tries; root; any of #3" in out
    root = build_root(tmp_path / "r", {"/etc/ssh/sshd_config": "AllowUsers bob\n"})
    res = cli("scan", "--ruleset", path, "--root", str(root), "--format", "json")
    doc = json.loads(res.out)
    [f] = [f for f in doc["results"] if f["rule_id"] == "SSH-ACCESS-LISTS"]
    assert f["status"] == "pass" and f["data"]["decided_by"] == ["AllowUsers"]


# ------------------------------------------------------------------ third-party parts
def _plugin_registry(monkeypatch: pytest.MonkeyPatch) -> plugins.Registry:
    monkeypatch.syspath_prepend(str(Path(__file__).parents[2] / "fixtures" / "plugins"
                                    / "malformed"))
    import aiaudit_malformed

    return plugins.build_registry(entry_points=False, extra=[aiaudit_malformed])


PLUGIN_PARTS = """\
ruleset: site
version: 1
rules:
  - id: MIXED
    severity: high
    title: a built-in part and third-party ones
    all_of:
      - {name: swap, check: kernel.sysctl, params: {key: vm.swappiness, op: le, value: 10}}
      - {name: good, check: malformed.good}
      - {name: bad, check: malformed.status_str}
"""


def test_a_third_party_part_is_isolated_and_its_malformed_result_is_its_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A composite with a third-party part is third-party code: it carries the plugin as
    its origin (the runner runs it in the worker process and names the plugin), and a part
    that yields a malformed result is an error of that part, not a crash of the rule."""
    reg = _plugin_registry(monkeypatch)
    rs = ruleset.load(_write(tmp_path, PLUGIN_PARTS), reg)
    (rule,) = rs.rules
    assert rule.check.origin == "plugin object extra-0 (aiaudit_malformed)"
    root = build_root(tmp_path / "root", {"/etc/sysctl.conf": "vm.swappiness = 60\n"})
    (f,) = scan(rs, Host(str(root), live=False), ScanOptions()).findings
    parts = {p["name"]: p for p in f.result.data["parts"]}
    assert parts["bad"]["status"] == "error"
    assert "check malformed.status_str returned an invalid result: status is a str" in \
        parts["bad"]["results"][0]["message"]
    assert f.result.status is Status.FAIL  # swap and good fail: all_of fails
    (snippet,) = [s for s in f.result.remediation.snippets if s.path == "/etc/x.conf"]
    assert snippet.mode == 0o600  # the part's file keeps its mode in the merged fix


def test_merged_file_snippets_get_the_permissions_both_allow() -> None:
    from aiaudit.core.model import Snippet
    from aiaudit.core.ruleset.composite import merge_snippets

    a = Snippet.file("/etc/x.conf", "a = 1\n", mode=0o640)
    b = Snippet.file("/etc/x.conf", "b = 2\n", mode=0o604)
    (merged,) = merge_snippets([a, b])
    assert merged.content == "a = 1\nb = 2\n" and merged.mode == 0o600
