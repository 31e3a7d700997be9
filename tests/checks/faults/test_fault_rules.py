"""The kernel-log rules of the shipped rulesets: in dl-training and slurm-preflight with
severities that drain only for what makes a node unfit, and ``aiaudit explain`` naming the
source of each threshold."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers import TESTS, cli

RULESETS = TESTS.parent / "rulesets"
DRAIN = {"GPU-XID-RESET-REQUIRED": "critical", "GPU-NVRM-OFF-BUS": "critical",
         "NVSWITCH-SXID-FATAL": "high", "PCIE-AER-UNCORRECTED": "high",
         "MCE-UNCORRECTED": "high", "AMDGPU-RAS-LOG-UNCORRECTABLE": "high"}
REPORT_ONLY = {"GPU-XID-APP-REPEATED": "medium", "PCIE-AER-CORRECTED-RATE": "low"}
SOURCES = {
    "GPU-XID-RESET-REQUIRED": "NVIDIA's 'Analyzing Xid Errors with the Xid Catalog'",
    "GPU-XID-APP-REPEATED": "aiaudit's choice",
    "GPU-NVRM-OFF-BUS": "NVIDIA's catalogue",
    "NVSWITCH-SXID-FATAL": "NVIDIA's SXid documentation",
    "PCIE-AER-UNCORRECTED": "PCIe Base",
    "PCIE-AER-CORRECTED-RATE": "aiaudit's choice",
    "MCE-UNCORRECTED": "Intel SDM",
    "AMDGPU-RAS-LOG-UNCORRECTABLE": "AMD's Device Metrics Exporter",
}


@pytest.mark.parametrize("name", ["dl-training", "slurm-preflight"])
def test_rules_are_shipped_with_their_severities(name: str) -> None:
    rules = {r["id"]: r for r in yaml.safe_load((RULESETS / f"{name}.yaml").read_text())
             ["rules"]}
    for rid, sev in {**DRAIN, **REPORT_ONLY}.items():
        assert rules[rid]["severity"] == sev, rid
    fail_on = "high"  # the prolog's default --fail-on (examples/slurm/prolog.sh)
    rank = ["info", "low", "medium", "high", "critical"]
    assert all(rank.index(rules[r]["severity"]) >= rank.index(fail_on) for r in DRAIN)
    assert all(rank.index(rules[r]["severity"]) < rank.index(fail_on) for r in REPORT_ONLY)


@pytest.mark.parametrize("rule", sorted(SOURCES))
def test_explain_names_the_source_of_the_thresholds(rule: str) -> None:
    out = cli("explain", rule, "--ruleset", "slurm-preflight")
    assert out.code == 0, out.err
    text = " ".join(out.out.split())
    assert "Threshold" in text and SOURCES[rule] in text, text
