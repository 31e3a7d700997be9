"""Golden files: every registered reporter renders the empty and the mixed sample run
exactly as ``tests/fixtures/golden/<format>/{empty,mixed}.<ext>``.

Regenerate after an intended change with ``AIAUDIT_REGEN_GOLDEN=1 pytest tests/reporters``
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aiaudit.core import plugins
from tests.helpers import FIXTURES
from tests.reporters.samples import SAMPLES

GOLDEN = FIXTURES / "golden"
REGEN = bool(os.environ.get("AIAUDIT_REGEN_GOLDEN"))
REPORTERS = sorted(plugins.registry().reporters)


def golden_path(fmt: str, sample: str) -> Path:
    """Where the golden rendering of ``sample`` in format ``fmt`` lives."""
    ext = plugins.registry().reporters[fmt].extension
    return GOLDEN / fmt / f"{sample}.{ext}"


@pytest.mark.parametrize("sample", sorted(SAMPLES))
@pytest.mark.parametrize("fmt", REPORTERS)
def test_golden(fmt: str, sample: str) -> None:
    text = plugins.registry().reporters[fmt].render(SAMPLES[sample](), {})
    path = golden_path(fmt, sample)
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"no golden file {path}; run with AIAUDIT_REGEN_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


def test_every_reporter_has_golden_files() -> None:
    """Meta-test: a reporter added without golden files fails here."""
    missing = [str(golden_path(fmt, s)) for fmt in REPORTERS for s in SAMPLES
               if not golden_path(fmt, s).is_file()]
    assert not missing, f"reporters without golden files: {missing}"
    stale = [d.name for d in GOLDEN.iterdir() if d.is_dir() and d.name not in REPORTERS]
    assert not stale, f"golden files of unknown formats: {stale}"


def test_builtin_formats_are_registered() -> None:
    assert {"text", "json", "sarif", "junit", "events", "prometheus"} <= set(REPORTERS)


@pytest.mark.parametrize("fmt", REPORTERS)
def test_rendering_is_deterministic(fmt: str) -> None:
    r = plugins.registry().reporters[fmt]
    assert r.render(SAMPLES["mixed"](), {}) == r.render(SAMPLES["mixed"](), {})
