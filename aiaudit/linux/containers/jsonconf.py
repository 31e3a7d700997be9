"""JSON configuration files (Docker's ``/etc/docker/daemon.json``).

dockerd reads the file with Go's ``encoding/json`` into a map and refuses to start on a
syntax error or a key given twice (daemon/config ``getConflictFreeConfiguration`` and
``findConfigurationConflicts``); both are a :class:`ParseError` with line and column here.
"""

from __future__ import annotations

import json
from typing import Any

from aiaudit.core.errors import ParseError
from aiaudit.core.parsing import MAX_INT_DIGITS

MAX_DEPTH = 64


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ParseError(f"key {k!r} given twice")
        out[k] = v
    return out


def _depth(v: Any, d: int = 0) -> int:
    if d > MAX_DEPTH:
        return d
    if isinstance(v, dict):
        return max([_depth(x, d + 1) for x in v.values()], default=d)
    if isinstance(v, list):
        return max([_depth(x, d + 1) for x in v], default=d)
    return d


class _LongInteger(Exception):
    """An integer token past :data:`MAX_INT_DIGITS` (``int()`` refuses 4,300 digits with a
    bare ValueError, and converting a long one costs quadratic time)."""

    def __init__(self, token: str) -> None:
        super().__init__(token[:20])
        self.token = token


def _bounded_int(token: str) -> int:
    if len(token.lstrip("-")) > MAX_INT_DIGITS:
        raise _LongInteger(token)
    return int(token)


def parse_object(text: str, source: str = "") -> dict[str, Any]:
    """A JSON document whose top level is an object; an empty file is ``{}``."""
    if not text.strip():
        return {}
    if text.count("[") + text.count("{") > 100_000:
        raise ParseError("more than 100000 arrays and objects", source=source)
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_bounded_int)
    except _LongInteger as exc:
        line = text.count("\n", 0, max(text.find(exc.token), 0)) + 1
        raise ParseError(f"an integer of {len(exc.token)} characters (at most "
                         f"{MAX_INT_DIGITS} digits)", line=line, source=source) from None
    except json.JSONDecodeError as exc:
        raise ParseError(f"column {exc.colno}: {exc.msg}", line=exc.lineno,
                         source=source) from None
    except RecursionError:
        raise ParseError("nested too deeply", source=source) from None
    except ParseError as exc:
        raise ParseError(str(exc), source=source) from None
    if not isinstance(data, dict):
        raise ParseError("the top level is not an object", source=source)
    if _depth(data) > MAX_DEPTH:
        raise ParseError(f"nested deeper than {MAX_DEPTH}", source=source)
    return data


def key_line(text: str, key: str) -> int | None:
    """1-based line of the first ``"key":`` in ``text`` (for evidence), or ``None``."""
    needle = json.dumps(key)
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return n
    return None
