"""``entrypoints.find_entry_points`` reads entry_points.txt files as importlib.metadata does
(the oracle here), and skips a file without the group's name cheaply."""

from __future__ import annotations

import importlib.metadata as md
import sys
from pathlib import Path

import pytest

from aiaudit.core.startup import entrypoints as plugins

DISTS = {
    "a": {"alpha-1.0.dist-info": "[aiaudit]\nalpha = alpha.plugin\n\n[console_scripts]\n"
                                 "alpha = alpha.cli:main\n",
          "beta_pkg-2.0.dist-info": "[aiaudit]\r\nbeta = beta.plug:hooks [extra]\r\n",
          "gamma-0.1.dist-info": "[console_scripts]\naiaudit-gamma = gamma:main\n",
          "delta-3.dist-info": None,
          "eps-1.egg-info": "# comment\n[aiaudit]\n# another\neps=eps.mod:obj.attr\n"},
    "b": {"alpha-0.9.dist-info": "[aiaudit]\nalpha-old = alpha_old.plugin\n",
          "zeta-1.dist-info": "[aiaudit]\nzeta = zeta\n"},
}


LATIN = {"latin-1.dist-info": b"[console_scripts]\nt = caf\xe9:main\n"}
"""Not UTF-8 (importlib.metadata raises on it): without the group's name, never decoded."""


def _make(tmp_path: Path, extra: dict[str, str | bytes | None] | None = None) -> list[str]:
    entries = []
    for entry, dists in {**DISTS, "c": extra or {}}.items():
        for dist, content in dists.items():
            d = tmp_path / entry / dist
            d.mkdir(parents=True)
            name, _, version = dist.rsplit(".", 1)[0].partition("-")
            (d / ("PKG-INFO" if dist.endswith(".egg-info") else "METADATA")).write_text(
                f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
            if isinstance(content, bytes):
                (d / "entry_points.txt").write_bytes(content)
            elif content is not None:
                (d / "entry_points.txt").write_bytes(content.encode())
        entries.append(str(tmp_path / entry))
    return entries


def test_same_entry_points_as_importlib_metadata(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    entries = _make(tmp_path)
    monkeypatch.setattr(sys, "path", entries)
    ours = [(ep.name, ep.target) for ep in plugins.find_entry_points("aiaudit")]
    real = [(ep.name, ep.value) for ep in md.entry_points(group="aiaudit")]
    assert sorted(ours) == sorted(real)
    assert ("alpha", "alpha.plugin") in ours and ("alpha-old", "alpha_old.plugin") not in ours
    assert len(ours) == 4


def test_file_without_the_group_is_not_parsed(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    entries = _make(tmp_path, LATIN)
    monkeypatch.setattr(sys, "path", entries)
    parsed: list[str] = []
    real = plugins._parse_entry_points

    def spy(text: str, group: str) -> list[tuple[str, str]]:
        parsed.append(text)
        return real(text, group)

    monkeypatch.setattr(plugins, "_parse_entry_points", spy)
    plugins.find_entry_points("aiaudit")
    # alpha, beta, eps, zeta and gamma (a console script named aiaudit-gamma); delta has
    # no file, alpha 0.9 is shadowed, latin has no "aiaudit" in it
    assert len(parsed) == 5
    assert not any("caf" in t for t in parsed)
