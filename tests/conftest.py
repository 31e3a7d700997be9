"""pytest fixtures shared by all tests (helpers live in ``tests/helpers.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pytest

from tests.helpers import build_root


@pytest.fixture
def make_root(tmp_path: Path):
    """Factory: ``make_root(files, links=..., dirs=...)`` -> Path of a new fixture root."""
    counter = iter(range(1000))

    def factory(files: Mapping[str, str | bytes] = {}, links: Mapping[str, str] = {},
                dirs: tuple[str, ...] = ()) -> Path:
        return build_root(tmp_path / f"root{next(counter)}", files, links, dirs)

    return factory


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never inherit a training user or colour settings from the caller."""
    for var in ("SLURM_JOB_USER", "SUDO_USER", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
