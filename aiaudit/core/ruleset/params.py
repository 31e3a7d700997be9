# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Rule params: what a rule (or a part of a composite rule) hands its check."""

from __future__ import annotations

from typing import Any, Mapping


def with_defaults(params: Mapping[str, Any], schema_doc: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the ``default`` of every absent top-level property of the check's
    params schema filled in."""
    out = dict(params)
    for key, prop in (schema_doc.get("properties") or {}).items():
        if key not in out and isinstance(prop, dict) and "default" in prop:
            out[key] = prop["default"]
    return out
