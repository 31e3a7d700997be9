"""``bench/prolog_budget.py``: the issue-28 instruction budget is measured on the rules the
README names, with the same ``--only`` list in every variant and only ``--skip`` varying."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prolog_budget",
                                                  REPO / "bench" / "prolog_budget.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_issue_28_rules_are_prolog_rules() -> None:
    b = _script()
    ids = b.ruleset_ids("slurm-preflight")
    assert len(b.ISSUE_28) == 19 and len(set(b.ISSUE_28)) == 19
    assert set(b.ISSUE_28) <= set(ids), set(b.ISSUE_28) - set(ids)
    assert not set(b.FABRIC) & set(b.KERNEL_LOG)


def test_variants_differ_only_in_what_they_skip() -> None:
    b = _script()
    ids = b.ruleset_ids("slurm-preflight")
    v = b.variants(ids, per_rule=True)
    assert sorted(v["base"]) == sorted(b.ISSUE_28)
    assert v["all"] == []
    assert sorted(v["+fabric"]) == sorted(b.KERNEL_LOG)
    assert sorted(v["+kernel-log"]) == sorted(b.FABRIC)
    for rule in b.ISSUE_28:
        assert set(v[f"+{rule}"]) == set(b.ISSUE_28) - {rule}
    assert len(v) == 4 + len(b.ISSUE_28)
    assert "+GPU-COUNT" not in b.variants(ids, per_rule=False)
