"""Ruleset loading: extends, overrides, defaults, validation policy, file handling."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiaudit.core import plugins, ruleset
from aiaudit.core.errors import RulesetError, UsageError
from aiaudit.core.model import Severity
from tests.helpers import FIXTURES

RS = FIXTURES / "rulesets"
REG = plugins.registry()


def test_load_small_fills_param_defaults() -> None:
    rs = ruleset.load(str(RS / "small.yaml"), REG)
    assert (rs.name, rs.version, [r.id for r in rs.rules]) == (
        "small", "2.1", ["SMALL-SWAPPINESS", "SMALL-MAX-MAP-COUNT"])
    swap = rs.get("SMALL-SWAPPINESS")
    assert swap is not None and swap.params["missing"] == "skip" and swap.params["persist"]
    assert swap.origin.endswith("small.yaml:6:5")
    assert swap.info.references and swap.info.tags == ("memory",)
    assert rs.get("NOPE") is None


def test_extends_overrides_disables_and_adds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")  # 'extends: small.yaml' is relative to the file, not the cwd
    rs = ruleset.load(str(RS / "extends.yaml"), REG)
    assert [r.id for r in rs.rules] == ["SMALL-SWAPPINESS", "SITE-DIRTY-RATIO"]
    assert rs.disabled == ("SMALL-MAX-MAP-COUNT",)
    swap = rs.get("SMALL-SWAPPINESS")
    assert swap.info.severity is Severity.CRITICAL
    # params are merged: the override changes value, keeps key/op/kernel_default
    assert dict(swap.params) == {"key": "vm.swappiness", "op": "le", "value": 1,
                               "kernel_default": 60, "missing": "skip",
                               "persist": True}
    assert rs.settings["fail_on"] == "low"


def test_extends_shipped_ruleset() -> None:
    base = ruleset.load("dl-training", REG)
    rs = ruleset.load(str(RS / "extends-shipped.yaml"), REG)
    assert [r.id for r in rs.rules] == [r.id for r in base.rules]
    swap = rs.get("SYSCTL-VM-SWAPPINESS")
    assert swap.info.severity is Severity.HIGH and swap.params["value"] == 1


def test_user_ruleset_params_validated_at_scan_time() -> None:
    with pytest.raises(RulesetError) as exc:
        ruleset.load(str(RS / "bad-params.yaml"), REG)
    assert len(exc.value.problems) == 3


def test_extends_override_with_bad_params_is_caught(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text(f"ruleset: x\nversion: '1'\nextends: {RS / 'small.yaml'}\noverrides:\n"
                 "  SMALL-SWAPPINESS:\n    params: {op: sortof}\n")
    with pytest.raises(RulesetError) as exc:
        ruleset.load(str(f), REG)
    assert "x.yaml:6:" in exc.value.problems[0] and "sortof" in exc.value.problems[0]


def test_site_file_checks_the_rules_it_touches_not_those_it_inherits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A site file that extends dl-training: its own rules and overrides are bound and
    their params checked even when the run does not select them; the inherited rules are
    bound only when selected, and their params (validated when shipped) are not checked
    again."""
    f = tmp_path / "site.yaml"
    f.write_text("ruleset: site\nversion: '1'\nextends: dl-training\noverrides:\n"
                 "  SYSCTL-VM-SWAPPINESS:\n    params: {value: 1}\n")
    checked: list[object] = []
    real = ruleset.schema_problems
    monkeypatch.setattr(ruleset, "schema_problems",
                        lambda inst, sch, doc, at=(): checked.append(at) or real(inst, sch,
                                                                                  doc, at))
    rs = ruleset.load(str(f), REG, select=lambda rid: rid == "SYSCTL-VM-MAX-MAP-COUNT")
    assert {r.id for r in rs.rules} == {"SYSCTL-VM-SWAPPINESS", "SYSCTL-VM-MAX-MAP-COUNT"}
    assert "GPU-COUNT" in rs.unbound and rs.get("SYSCTL-VM-SWAPPINESS").params["value"] == 1
    params_checked = [a for a in checked if a and "params" in list(a)]
    assert len(params_checked) == 1, params_checked  # the override's, once


def test_shipped_ruleset_does_not_import_jsonschema() -> None:
    """A scan with a shipped ruleset skips validation (the test suite validates it)."""
    code = ("import sys; from aiaudit.core import plugins, ruleset; "
            "ruleset.load('dl-training', plugins.registry()); "
            "print('jsonschema' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "False"


def test_a_shipped_ruleset_binds_only_the_selected_rules() -> None:
    """``--only``/``--skip``: the rules that do not run are listed, not bound, and the
    rules that run are bound exactly as without a selection."""
    full = ruleset.load("dl-training", REG)
    one = ruleset.load("dl-training", REG, select=lambda rid: rid == "SYSCTL-VM-SWAPPINESS")
    assert [r.id for r in one.rules] == ["SYSCTL-VM-SWAPPINESS"]
    assert one.rules[0] == full.get("SYSCTL-VM-SWAPPINESS")
    assert sorted(one.unbound) == sorted(r.id for r in full.rules[1:]) and not full.unbound
    assert one.disabled == full.disabled


def test_a_ruleset_file_binds_every_rule_whatever_is_selected() -> None:
    """Binding a file validates it: a bad rule is an error even when it would not run."""
    with pytest.raises(RulesetError):
        ruleset.load(str(RS / "bad-params.yaml"), REG, select=lambda rid: False)
    rs = ruleset.load(str(RS / "small.yaml"), REG, select=lambda rid: False)
    assert len(rs.rules) == 2 and rs.unbound == ()


def test_a_one_rule_scan_imports_only_its_check_module() -> None:
    code = ("import sys\nfrom aiaudit.cli import main\n"
            "main(['scan', '--ruleset', 'dl-training', '--only', 'SYSCTL-VM-SWAPPINESS', "
            "'--format', 'json', '--output', '/dev/null', '--root', sys.argv[1]])\n"
            "print(sorted(m for m in sys.modules if m.startswith('aiaudit.checks.')))")
    out = subprocess.run([sys.executable, "-c", code, str(FIXTURES / "roots" /
                          "sysctl-etc-overrides-vendor" / "root")],
                         capture_output=True, text=True, check=False)
    assert out.stdout.strip().splitlines()[-1] == \
        "['aiaudit.checks.kernel', 'aiaudit.checks.kernel.sysctl']", out.stderr


def test_is_path(tmp_path, monkeypatch) -> None:
    assert ruleset.is_path("./x") and ruleset.is_path("x.yaml") and ruleset.is_path("a/b")
    assert ruleset.is_path("x.yml")
    assert not ruleset.is_path("dl-training")
    (tmp_path / "dl-training").write_text("ruleset: hijack\n")
    monkeypatch.chdir(tmp_path)
    assert not ruleset.is_path("dl-training"), "a file in the cwd does not make a name a path"


@pytest.mark.parametrize("content,needle", [
    (b"\xff\xfe not utf-8", "not UTF-8"),
    (b"#" * (ruleset.MAX_RULESET_BYTES + 1), "too large"),
])
def test_bad_ruleset_files(tmp_path: Path, content: bytes, needle: str) -> None:
    f = tmp_path / "r.yaml"
    f.write_bytes(content)
    with pytest.raises(UsageError, match=needle):
        ruleset.load(str(f), REG)


def test_fifo_ruleset_refused(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    os.mkfifo(f)
    with pytest.raises(UsageError, match="not a regular file"):
        ruleset.load(str(f), REG)


def test_self_extends_is_a_cycle(tmp_path: Path) -> None:
    f = tmp_path / "self.yaml"
    f.write_text("ruleset: s\nversion: '1'\nextends: self.yaml\n")
    with pytest.raises(RulesetError, match=r"self\.yaml:3:10: 'extends' cycle"):
        ruleset.load(str(f), REG)


def test_shared_anchors_are_fine(tmp_path: Path) -> None:
    """Aliases within reason (params shared by rules) load; only bombs and loops are refused."""
    f = tmp_path / "r.yaml"
    f.write_text('ruleset: shared\nversion: "1"\n'
                 "rules:\n"
                 "  - id: A\n    check: kernel.sysctl\n    severity: low\n    title: a\n"
                 "    params: &p {key: vm.swappiness, op: le, value: 10}\n"
                 "  - id: B\n    check: kernel.sysctl\n    severity: low\n    title: b\n"
                 "    params: *p\n")
    rs = ruleset.load(str(f), REG)
    assert [r.params["key"] for r in rs.rules] == ["vm.swappiness", "vm.swappiness"]
