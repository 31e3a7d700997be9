"""Meta-test: every host-tuning rule has a pass and a fail fixture root, live and offline."""

from __future__ import annotations

import yaml

from aiaudit.core import plugins, ruleset
from tests.helpers import ROOTS

CHECKS = ("block.", "cpu.", "memory.")


def _statuses(spec) -> set[str]:
    if isinstance(spec, str):
        return {spec}
    if "subjects" in spec:
        return set().union(*(_statuses(s) for s in spec["subjects"].values()))
    return {spec["status"]}


def test_every_tuning_rule_has_pass_and_fail_roots_live_and_offline() -> None:
    rs = ruleset.load("dl-training", plugins.registry(), validate=True)
    rules = [r.id for r in rs.rules if r.check.id.startswith(CHECKS)]
    assert len(rules) >= 10
    seen: dict[str, set[tuple[str, str]]] = {r: set() for r in rules}
    for exp_file in ROOTS.glob("*/expected.yaml"):
        exp = yaml.safe_load(exp_file.read_text())
        mode = exp.get("mode", "offline")
        for rule_id, spec in exp["expect"].items():
            if rule_id in seen:
                seen[rule_id] |= {(mode, s) for s in _statuses(spec)}
    want = {(m, s) for m in ("live", "offline") for s in ("pass", "fail")}
    missing = {r: sorted(want - got) for r, got in seen.items() if want - got}
    assert not missing, missing
