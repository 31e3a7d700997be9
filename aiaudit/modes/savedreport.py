"""Read a saved JSON report (``aiaudit scan -o json:FILE``) back into a RunResult.

Used by ``aiaudit render`` and ``aiaudit remediate``.  The document is validated against
``schemas/report.schema.json`` first, so a truncated, hand-edited or foreign file gives one
clear message (exit code 2) instead of a traceback.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from aiaudit.core.errors import UsageError
from aiaudit.core.inputs import MAX_DEPTH, read_input, too_deep
from aiaudit.core.model import RunResult
from aiaudit.core.startup.collector import after_import

MAX_REPORT_BYTES = 256 * 1024 * 1024
MAX_INT_DIGITS = 100
"""Longest integer a saved report may hold (counts, line numbers: a few digits).  Python
refuses to convert more than 4,300 digits (a ValueError without a place), and a number of
a hundred digits already overflows the floats reporters format it as."""


class _BadNumber(ValueError):
    """A number the report may not hold; ``token`` is its text."""

    def __init__(self, token: str, why: str) -> None:
        super().__init__(why)
        self.token = token
        self.why = why


def _parse_int(token: str) -> int:
    if len(token.lstrip("-")) > MAX_INT_DIGITS:
        raise _BadNumber(token, f"integer of {len(token.lstrip('-'))} digits (at most "
                                f"{MAX_INT_DIGITS})")
    return int(token)


def _parse_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _BadNumber(token, f"number {token[:20]}{'...' if len(token) > 20 else ''} is "
                                "out of range")
    return value


def _parse_constant(token: str) -> float:
    raise _BadNumber(token, f"{token} is not a JSON number")


def _place(text: str, token: str) -> tuple[int, int]:
    """Line and column of the first occurrence of number ``token`` (not inside a longer
    number; the JSON decoder does not say where its number hooks were called)."""
    m = re.search(r"(?<![\w.+-])" + re.escape(token) + r"(?![\w.])", text)
    at = m.start() if m else 0
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def decode_json(text: str, path: str, what: str, hint: str = "") -> Any:
    """Decode a saved JSON report; every problem (syntax, a number with thousands of
    digits, ``NaN``, nesting deeper than :data:`~aiaudit.core.inputs.MAX_DEPTH`) is one
    :class:`UsageError` ``path:line:col: not <what>: problem``."""
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float,
                          parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}:{exc.colno}: not {what}: {exc.msg}{hint}"
                         ) from None
    except _BadNumber as exc:
        line, col = _place(text, exc.token)
        raise UsageError(f"{path}:{line}:{col}: not {what}: {exc.why}") from None
    except RecursionError:
        raise UsageError(f"{path}: not {what}: nested too deeply") from None
    if too_deep(data):
        raise UsageError(f"{path}: not {what}: nested deeper than {MAX_DEPTH} levels")
    return data


def load_report(path: str) -> RunResult:
    """The RunResult saved in ``path`` (``-`` reads stdin); :class:`UsageError` if the
    file cannot be read or is not a valid aiaudit JSON report."""
    from aiaudit.core.ruleset import schema
    from aiaudit.core.serialize import run_from_dict

    data = decode_json(_read(path), path, "a JSON report")
    import jsonschema

    after_import("jsonschema")
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
        if sys.stdin is None:
            raise UsageError("-: cannot read the report from stdin: it is closed")
        stream = getattr(sys.stdin, "buffer", None)
        try:
            if stream is None:  # replaced by a text stream (tests)
                return sys.stdin.read(MAX_REPORT_BYTES)
            # the bytes, decoded strictly as a file is (the text layer would let undecodable
            # bytes through as surrogates, or depend on the locale)
            data = stream.read(MAX_REPORT_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"-: cannot read the report from stdin: {exc.strerror}") from None
        if len(data) > MAX_REPORT_BYTES:
            raise UsageError(f"-: more than {MAX_REPORT_BYTES} bytes is too large for a report")
        try:
            return str(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise UsageError(f"-: not UTF-8 text (byte {exc.start})") from None
    return read_input(path, "report", MAX_REPORT_BYTES)
