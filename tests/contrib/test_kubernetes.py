"""contrib/kubernetes: the DaemonSet mounts the host read-only and writes only the
features.d directory nfd-worker reads; the host-timer unit writes the same file."""

from __future__ import annotations

import configparser
from pathlib import Path

import yaml

CONTRIB = Path(__file__).resolve().parents[2] / "contrib" / "kubernetes"
FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"


def test_daemonset_is_read_only_but_for_features_d() -> None:
    ds = yaml.safe_load((CONTRIB / "daemonset.yaml").read_text())
    assert ds["kind"] == "DaemonSet"
    pod = ds["spec"]["template"]["spec"]
    volumes = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    (c,) = pod["containers"]
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    writable = [n for n, m in mounts.items() if not m.get("readOnly")]
    assert writable == ["features-d"] and volumes["features-d"] == FEATURES_D
    assert {volumes[n] for n in mounts} == {"/", "/proc", "/sys", FEATURES_D}
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"]
    assert sc["capabilities"]["drop"] == ["ALL"]
    script = c["args"][0]
    assert f"-o nfd:{mounts['features-d']['mountPath']}/aiaudit" in script
    assert f"--root {mounts['host-root']['mountPath']} --live" in script
    assert pod["hostNetwork"] is True  # listeners and net.* sysctls of the node


def test_host_unit_writes_the_feature_file_and_nothing_else() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.read_string((CONTRIB / "aiaudit-nfd.service").read_text())
    svc = unit["Service"]
    assert f"-o nfd:{FEATURES_D}/aiaudit" in " ".join(svc["ExecStart"].split())
    assert svc["ProtectSystem"] == "strict" and svc["ReadWritePaths"] == FEATURES_D
