"""``json`` reporter: one document valid against ``schemas/report.schema.json``.

Compact by default (one line, no spaces): ``json.dumps`` then runs Python's C encoder,
where ``indent=2`` falls back to the pure-Python one (24 M against 7.5 M instructions for a
live scan's report, issue 20).  ``{"pretty": True}`` indents it for a person: the CLI asks
for that on a terminal and with ``--pretty``.  The two forms hold the same document.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.core.serialize import run_dict


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """The full scan as one JSON document (``options["pretty"]``: indented)."""
    if options.get("pretty"):
        return json.dumps(run_dict(run), indent=2, ensure_ascii=False) + "\n"
    return json.dumps(run_dict(run), separators=(",", ":"), ensure_ascii=False) + "\n"


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``json`` format."""
    return [ReporterSpec("json", render, "one JSON document (schemas/report.schema.json; "
                         "indented on a terminal or with --pretty)", "json")]
