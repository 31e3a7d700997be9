"""``json`` reporter: one document valid against ``schemas/report.schema.json``."""

from __future__ import annotations

import json
from typing import Any, Mapping

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.serialize import run_dict


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """The full scan as one JSON document."""
    return json.dumps(run_dict(run), indent=2, ensure_ascii=False) + "\n"


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``json`` format."""
    return [ReporterSpec("json", render, "one JSON document (schemas/report.schema.json)",
                         "json")]
