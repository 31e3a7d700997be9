"""A FAIL never shows equal expected and actual values (issue 27: a live Debian host with
fs.protected_symlinks at 1 was told "drift" with expected 1 and actual 1): every rule of
every shipped ruleset on every fixture root (about 16 s of CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aiaudit.core import plugins, ruleset
from aiaudit.core.host import Host
from aiaudit.core.scan import ScanOptions, scan
from tests.helpers import ROOTS

CASES = sorted(p.parent for p in ROOTS.glob("*/expected.yaml"))
RULESETS = ("dl-training", "linux-hardening", "slurm-preflight")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_no_failure_with_equal_expected_and_actual(case: Path) -> None:
    exp = yaml.safe_load((case / "expected.yaml").read_text())
    same = []
    for name in RULESETS:
        rs = ruleset.load(name, plugins.registry(), validate=True)
        host = Host(str(case / "root"), live=exp.get("mode", "offline") == "live")
        run = scan(rs, host, ScanOptions(user=exp.get("user"),
                                         settings=exp.get("settings") or {}))
        for f in run.findings:
            r = f.result
            if f.status.value == "fail" and r.expected is not None and r.actual is not None \
                    and str(r.expected).strip() == str(r.actual).strip():
                same.append(f"{name} {f.rule_id} [{r.subject}]: {r.message}")
    assert not same, "\n".join(same)
