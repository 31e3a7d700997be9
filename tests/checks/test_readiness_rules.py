"""The readiness and shared-node rules of dl-training: each has a rationale, references
and a fix, ``aiaudit explain`` shows them, and the README lists it."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers import TESTS, cli

NEW_RULES = [
    "GPU-NOUVEAU-DISABLED", "GPU-NVIDIA-UVM-AVAILABLE", "GPU-FABRICMANAGER",
    "GPU-PEERMEM-LOADED", "PCIE-LINK-FULL", "IOMMU-PASSTHROUGH", "PCIE-ACS-P2P",
    "RDMA-PORTS-ACTIVE", "NET-FABRIC-MTU", "IRQ-BALANCED-OR-PINNED",
    "SYSCTL-VM-ZONE-RECLAIM-MODE", "GPU-ECC-ENABLED", "GPU-MEMORY-ERRORS-NONE-PENDING",
    "GPU-CLOCKS-NOT-THROTTLED", "SYSCTL-NET-IPV4-TCP-MEM", "SYSCTL-KERNEL-PID-MAX",
    "SYSCTL-KERNEL-THREADS-MAX", "TRAINING-USER-NO-ROOT-GROUPS", "TRAINING-USER-SUDO-PASSWORD",
    "DOCKER-USERNS-REMAP", "DOCKER-NO-NEW-PRIVILEGES", "DOCKER-LIVE-RESTORE", "DOCKER-TCP-TLS",
    "DOCKER-NVIDIA-RUNTIME", "DOCKER-SOCKET-ACCESS", "NVIDIA-CTK-VERSION", "NVIDIA-CTK-CONFIG",
    "APPTAINER-NO-SETUID", "PODMAN-ROOTLESS-SUBIDS", "UPDATES-SECURITY-PENDING",
    "UPDATES-UNATTENDED", "TIME-SYNC-ACTIVE",
]
RULES = {r["id"]: r for r in yaml.safe_load(
    (TESTS.parent / "rulesets/dl-training.yaml").read_text())["rules"]}
README = (TESTS.parent / "README.md").read_text()


@pytest.mark.parametrize("rule_id", NEW_RULES)
def test_rule_is_documented(rule_id: str) -> None:
    rule = RULES[rule_id]
    assert len(rule["rationale"]) > 80
    assert rule["references"] and all(r.startswith("https://") for r in rule["references"])
    assert rule["title"].startswith("Ensure "), "title convention: README \"Rulesets\""
    assert rule_id in README
    r = cli("explain", rule_id)
    assert r.code == 0, r.err
    assert "Why it matters" in r.out and rule["references"][0] in r.out


@pytest.mark.parametrize("case", ["node-hgx-nvswitch", "node-pcie-workstation",
                                  "node-cpu-only", "node-container-host"])
def test_every_gpu_node_fixture_has_a_golden_result_for_every_new_rule(case: str) -> None:
    expect = yaml.safe_load((TESTS / "fixtures/roots" / case / "expected.yaml").read_text())
    assert not set(NEW_RULES) - set(expect["expect"])
