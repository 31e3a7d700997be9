"""Read a saved JSON report (``aiaudit scan -o json:FILE``) back into a RunResult.

Used by ``aiaudit render`` and ``aiaudit remediate``.  The document is validated against
``schemas/report.schema.json`` first, so a truncated, hand-edited or foreign file gives one
clear message (exit code 2) instead of a traceback.
"""

from __future__ import annotations

import json
import sys

from aiaudit.errors import UsageError
from aiaudit.inputs import MAX_DEPTH, read_input, too_deep
from aiaudit.model import RunResult

MAX_REPORT_BYTES = 256 * 1024 * 1024


def load_report(path: str) -> RunResult:
    """The RunResult saved in ``path`` (``-`` reads stdin); :class:`UsageError` if the
    file cannot be read or is not a valid aiaudit JSON report."""
    from aiaudit.ruleset import schema
    from aiaudit.serialize import run_from_dict

    text = _read(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not a JSON report: line {exc.lineno} column {exc.colno}: "
                         f"{exc.msg}") from None
    except RecursionError:
        raise UsageError(f"{path}: not a JSON report: nested too deeply") from None
    if too_deep(data):
        raise UsageError(f"{path}: not a JSON report: nested deeper than {MAX_DEPTH} levels")
    import jsonschema

    doc = schema("report.schema.json")
    validator = jsonschema.validators.validator_for(doc)(doc)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        err = errors[0]
        at = "/".join(str(p) for p in err.absolute_path) or "(top)"
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        msg = err.message if len(err.message) < 200 else err.message[:200] + "..."
        raise UsageError(f"{path}: not a valid aiaudit JSON report: {at}: {msg}{more}")
    return run_from_dict(data)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read(MAX_REPORT_BYTES)
    return read_input(path, "report", MAX_REPORT_BYTES)
