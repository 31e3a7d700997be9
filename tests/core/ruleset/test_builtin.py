"""Shipped rulesets: JSON twins in sync with the YAML, used only when in sync."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from aiaudit.core.ruleset import builtin as builtin_rulesets
from aiaudit.core.startup import twins

RULESETS = Path(__file__).resolve().parents[3] / "rulesets"


def test_every_twin_is_in_sync() -> None:
    """Run `python -m aiaudit.core.startup.twins rulesets` after editing a shipped ruleset."""
    yamls = sorted(RULESETS.glob("*.yaml"))
    assert yamls
    for y in yamls:
        twin = y.with_suffix(".json")
        assert twin.is_file(), \
            f"{twin.name} missing: run python -m aiaudit.core.startup.twins rulesets"
        doc = json.loads(twin.read_text())
        assert doc["source_crc32"] == twins.fingerprint(y.read_bytes()), (
            f"{twin.name} is stale: run python -m aiaudit.core.startup.twins rulesets")
        assert doc["data"] == yaml.safe_load(y.read_text())


def test_stale_twin_is_ignored(tmp_path: Path, monkeypatch) -> None:
    shutil.copy(RULESETS / "dl-training.yaml", tmp_path / "x.yaml")
    twins.compile_twins(str(tmp_path))
    (tmp_path / "x.yaml").write_text((tmp_path / "x.yaml").read_text() + "\n# edited\n")

    monkeypatch.setattr(builtin_rulesets.resources, "directory", lambda pkg: str(tmp_path))
    assert builtin_rulesets._data_loader("x.yaml")() is None
    twins.compile_twins(str(tmp_path))
    assert builtin_rulesets._data_loader("x.yaml")()["ruleset"] == "dl-training"
