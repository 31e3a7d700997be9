"""``aiaudit validate`` (issue 30): every problem of a ruleset in one run, each with its
file:line:col; values checked against the check's types (a numeric comparison with a word
is a validate error, not a scan-time one); shipped ruleset names; a hint towards
``limits.configured`` when ``limits.effective`` is given an item it does not take."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.test_cli import _usage_error
from tests.helpers import cli

HEAD = 'ruleset: mine\nversion: "1"\nrules:\n'


def _rule(rid: str, check: str, params: str, severity: str = "low") -> str:
    return (f"  - id: {rid}\n    check: {check}\n    severity: {severity}\n"
            f"    title: t\n    params: {params}\n")


def _write(tmp_path: Path, *rules: str) -> str:
    p = tmp_path / "mine.yaml"
    p.write_text(HEAD + "".join(rules))
    return str(p)


def test_every_problem_in_one_run(tmp_path: Path) -> None:
    path = _write(tmp_path,
                  _rule("A-ONE", "kernel.sysctl", "{key: vm.swappiness, op: le, value: ten}"),
                  _rule("A-TWO", "limits.effective", "{item: core, type: hard}", "bogus"),
                  _rule("A-THREE", "no.such", "{}"),
                  _rule("A-FOUR", "kernel.sysctl", "{key: vm.swappiness, op: ge, value: 10x}"))
    res = cli("validate", path)
    _usage_error(res)
    lines = res.err.strip().splitlines()
    # a schema problem (the severity) no longer hides what binding finds
    want = ["mine.yaml:11:15: rules/1/severity: 'bogus' is not one of",
            "mine.yaml:8:49: rules/0/params/value: 'ten': op lt, le, gt and ge compare "
            "numbers: the value must be a number (rule A-ONE)",
            "mine.yaml:13:20: rules/1/params/item: 'core': limits.effective follows",
            "mine.yaml:15:12: rule A-THREE: unknown check 'no.such'",
            "mine.yaml:23:49: rules/3/params/value: '10x': op lt, le, gt and ge compare "
            "numbers"]
    assert len(lines) == len(want), lines
    for w in want:
        assert any(w in line for line in lines), (w, lines)


def test_effective_item_suggests_configured(tmp_path: Path) -> None:
    res = cli("validate", _write(tmp_path, _rule("L-CORE", "limits.effective",
                                                 "{item: core, type: hard, min: 0}")))
    _usage_error(res, "rules/0/params/item: 'core'", "use check limits.configured")
    # and limits.configured takes it
    ok = cli("validate", _write(tmp_path, _rule("L-CORE", "limits.configured",
                                                "{item: core, type: hard, op: le, value: 0}")))
    assert ok.code == 0, ok.err


@pytest.mark.parametrize("check,params", [
    ("kernel.sysctl", "{key: vm.swappiness, op: le, value: '10'}"),
    ("kernel.sysctl", "{key: vm.swappiness, op: ge, value: 0.5}"),
    ("kernel.sysctl", "{key: kernel.core_pattern, op: eq, value: core}"),  # text: any
    ("limits.configured", "{item: nofile, type: hard, op: ge, value: unlimited}"),
    ("ssh.sshd_option", "{keyword: LoginGraceTime, op: le, value: 1m}"),
    ("ssh.sshd_option", "{keyword: MaxStartups, fields: [{op: le, value: 10}, null]}"),
])
def test_values_each_check_can_order(tmp_path: Path, check: str, params: str) -> None:
    res = cli("validate", _write(tmp_path, _rule("OK-ONE", check, params)))
    assert res.code == 0, res.err


@pytest.mark.parametrize("check,params,needle", [
    ("limits.configured", "{item: core, type: hard, op: le, value: lots}",
     "'lots': op lt, le, gt and ge compare numbers: the value must be a number or "
     "unlimited"),
    ("ssh.sshd_option", "{keyword: LoginGraceTime, op: le, value: soon}",
     "the value must be a number or a time such as 5m"),
    ("kernel.sysctl", "{key: net.ipv4.tcp_rmem, fields: [{op: ge, value: big}]}",
     "rules/0/params/fields/0/value: 'big'"),
])
def test_words_under_an_ordering_are_refused(tmp_path: Path, check: str, params: str,
                                             needle: str) -> None:
    _usage_error(cli("validate", _write(tmp_path, _rule("BAD-ONE", check, params))), needle)


def test_no_expectation_says_so(tmp_path: Path) -> None:
    res = cli("validate", _write(tmp_path, _rule("NO-EXP", "kernel.sysctl",
                                                 "{key: vm.swappiness}")))
    _usage_error(res, "mine.yaml:8:13: rules/0/params: the rule states no expectation: "
                      "give op and value, or any of min, max")


def test_shipped_ruleset_by_name(tmp_path: Path) -> None:
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        res = cli("validate", "dl-training")
        assert res.code == 0 and "dl-training: ok (dl-training" in res.err + res.out
        _usage_error(cli("validate", "nosuch"), "unknown ruleset 'nosuch'", "dl-training")
        # a file of that name here is the file (validate is about the file you give)
        (tmp_path / "dl-training").write_text("ruleset: [\n")
        _usage_error(cli("validate", "dl-training"), "invalid YAML")
    finally:
        os.chdir(old)


def test_too_broken_to_bind_still_one_clean_error_list(tmp_path: Path) -> None:
    for body in ("rules: 5\n", "rules:\n  - 7\n  - {id: X}\n", "rules: [{id: 5, check: []}]\n",
                 "rules: []\noverrides: {A: 3}\n"):
        p = tmp_path / "b.yaml"
        p.write_text('ruleset: b\nversion: "1"\n' + body)
        _usage_error(cli("validate", str(p)), "b.yaml:")
