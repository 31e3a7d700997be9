"""``aiaudit baseline`` round trip: capture a known-good node, then hold nodes that differ
in one fact each to it; each fails exactly the rule of that fact.

The nodes are ``--live`` snapshot roots made from the ``node-hgx-nvswitch`` fixture (a
real HGX H100 sysfs/procfs layout).  Hand-made changes, labelled here: the good node's GPU
4 link is set back to x16 and its HDR port to NDR (the fixture's own faults), and every
GPU gets a ``Video BIOS:`` line in ``/proc/driver/nvidia/gpus/<BDF>/information`` in the
format of kernel-open/nvidia/nv-procfs.c (``"Video BIOS: \\t 96.00.89.00.01"``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOTS, cli

HGX = ROOTS / "node-hgx-nvswitch" / "root"
GPUS = "proc/driver/nvidia/gpus"
VBIOS = "96.00.89.00.01"


def _write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.unlink()  # a copy of the fixture's file: replace it, never write through a link
    p.write_text(text)


def good_node(tmp: Path) -> Path:
    root = tmp / "good"
    shutil.copytree(HGX, root, symlinks=True)
    width = root / "sys/devices/pci0000:50/0000:50:01.0/0000:51:00.0/0000:52:00.0" \
        / "0000:58:00.0/current_link_width"
    _write(root, str(width.relative_to(root)), "16\n")
    _write(root, "sys/class/infiniband/mlx5_3/ports/1/rate", "400 Gb/sec (4X NDR)\n")
    for info in sorted((root / GPUS).glob("*/information")):
        text = info.read_text()
        _write(root, str(info.relative_to(root)), text + f"Video BIOS: \t {VBIOS}\n")
    return root


def variant(good: Path, tmp: Path, name: str) -> Path:
    root = tmp / name
    shutil.copytree(good, root, symlinks=True)
    if name == "gpu-missing":
        shutil.rmtree(root / GPUS / "0000:7a:00.0")
    elif name == "gpu-x8":
        rel = "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:00.0/0000:18:00.0"
        _write(root, f"{rel}/current_link_width", "8\n")
    elif name == "hca-slow":
        _write(root, "sys/class/infiniband/mlx5_6/ports/1/rate", "200 Gb/sec (4X HDR)\n")
    elif name == "vbios":
        info = root / GPUS / "0000:38:00.0/information"
        _write(root, str(info.relative_to(root)),
               info.read_text().replace(VBIOS, "96.00.74.00.0B"))
    return root


def class_failures(klass: Path, root: Path, tmp: Path) -> dict[str, str]:
    out = tmp / f"{root.name}.json"
    r = cli("scan", "--root", str(root), "--live", "--ruleset", str(klass), "--format",
            "text", "-o", f"json:{out}")
    assert r.code in (0, 1), r.err
    doc = json.loads(out.read_text())
    return {x["rule_id"]: x["message"] for x in doc["results"]
            if x["rule_id"].startswith("CLASS-") and x["status"] != "pass"}


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("class")
    good = good_node(tmp)
    klass = tmp / "hgx-h100.yaml"
    r = cli("baseline", "--root", str(good), "--live", "-o", str(klass))
    assert r.code == 0, r.err
    return good, klass


def test_class_is_a_reviewable_ruleset(nodes: tuple[Path, Path]) -> None:
    _, klass = nodes
    text = klass.read_text()
    doc = yaml.safe_load(text)
    assert doc["ruleset"] == "hgx-h100" and doc["extends"] == "dl-training"
    ids = {r["id"] for r in doc["rules"]}
    assert {"CLASS-GPU-NVIDIA-COUNT", "CLASS-GPU-PCIE-WIDTH", "CLASS-GPU-NVIDIA-VBIOS",
            "CLASS-HCA-PORT-RATE", "CLASS-MEMORY-TOTAL-GIB", "CLASS-PACKAGES"} <= ids
    assert "# read at /proc/driver/nvidia/gpus (runtime)" in text
    assert cli("validate", str(klass)).code == 0


def test_the_good_node_passes_its_class(nodes: tuple[Path, Path], tmp_path: Path) -> None:
    good, klass = nodes
    assert class_failures(klass, good, tmp_path) == {}


@pytest.mark.parametrize(("name", "rule", "words"), [
    ("gpu-missing", "CLASS-GPU-NVIDIA-COUNT", "expected 8, found 7"),
    ("gpu-x8", "CLASS-GPU-PCIE-WIDTH", "0000:18:00.0: expected 16, found 8"),
    ("hca-slow", "CLASS-HCA-PORT-RATE", "mlx5_6/1: expected 400 Gb/sec (4X NDR), found 200"),
    ("vbios", "CLASS-GPU-NVIDIA-VBIOS", "expected 96.00.89.00.01, found 96.00.74.00.0B"),
])
def test_each_difference_fails_exactly_its_rule(nodes: tuple[Path, Path], tmp_path: Path,
                                                name: str, rule: str, words: str) -> None:
    good, klass = nodes
    failed = class_failures(klass, variant(good, tmp_path, name), tmp_path)
    assert set(failed) == {rule}
    assert words in failed[rule]


def test_offline_scan_of_the_class_skips_live_facts(nodes: tuple[Path, Path],
                                                     tmp_path: Path) -> None:
    good, klass = nodes
    out = tmp_path / "off.json"
    cli("scan", "--root", str(good), "--offline", "--ruleset", str(klass), "--format", "text",
        "-o", f"json:{out}")
    res = {x["rule_id"]: x for x in json.loads(out.read_text())["results"]
           if x["rule_id"].startswith("CLASS-")}
    assert res["CLASS-GPU-NVIDIA-COUNT"]["status"] == "skip"
    assert "live state" in res["CLASS-GPU-NVIDIA-COUNT"]["message"]
    assert res["CLASS-PACKAGES"]["status"] == "pass"  # files decide it, offline too


def test_this_host_passes_a_class_captured_from_itself(tmp_path: Path) -> None:
    klass = tmp_path / "self.yaml"
    assert cli("baseline", "-o", str(klass)).code == 0
    assert class_failures(klass, Path("/"), tmp_path) == {}
