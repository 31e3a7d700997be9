"""``aiaudit baseline --from-fleet``: the class proposed from a fleet's saved reports."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.baseline.test_roundtrip import good_node, variant
from tests.helpers import cli


def _report(root: Path, tmp: Path, host: str) -> Path:
    out = tmp / f"{host}.json"
    r = cli("scan", "--root", str(root), "--live", "--format", "text", "-o", f"json:{out}")
    assert r.code in (0, 1), r.err
    doc = json.loads(out.read_text())
    doc["host"]["hostname"] = host  # the copies share the fixture's hostname and id
    doc["host"]["machine_id"] = f"{len(host):032x}"
    out.write_text(json.dumps(doc))
    return out


def test_majority_class_and_deviating_nodes(tmp_path: Path) -> None:
    good = good_node(tmp_path)
    odd = variant(good, tmp_path, "gpu-x8")
    reports = [_report(good, tmp_path, f"gpu{i:02d}") for i in range(1, 4)]
    reports.append(_report(odd, tmp_path, "gpu-odd"))
    klass = tmp_path / "fleet.yaml"
    r = cli("baseline", "--from-fleet", *map(str, reports), "--min-share", "70", "-o",
            str(klass))
    assert r.code == 0, r.err
    assert "gpu.pcie.width: differs on 1 node(s): gpu-odd" in r.err
    doc = yaml.safe_load(klass.read_text())
    width = next(x for x in doc["rules"] if x["id"] == "CLASS-GPU-PCIE-WIDTH")
    assert set(width["params"]["expected"].values()) == {16}
    assert width["params"]["compare"] == "per_device"
    # with 90% required, the 3-of-4 split leaves the width out, with the split as a comment
    r = cli("baseline", "--from-fleet", *map(str, reports), "-o", str(klass))
    text = klass.read_text()
    assert "CLASS-GPU-PCIE-WIDTH" not in text
    assert "#   gpu.pcie.width: no value on 90% of 4 nodes" in text


def test_reports_without_facts_and_bad_input_are_usage_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = cli("baseline", "--from-fleet", str(bad), "-o", str(tmp_path / "x.yaml"))
    assert r.code == 2 and "bad.json: not a JSON report" in r.err
    assert "Traceback" not in r.err
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"results": []}))
    r = cli("baseline", "--from-fleet", str(empty), "-o", str(tmp_path / "x.yaml"))
    assert r.code == 2 and "no inventory.facts result" in r.err
    assert not (tmp_path / "x.yaml").exists()
