# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Pure parsers: text in, data out; they raise only :class:`aiaudit.core.errors.ParseError`."""

from __future__ import annotations

from aiaudit.core.errors import ParseError

MAX_INT_DIGITS = 1000
"""Longest number :func:`to_int` converts.  Python's ``int()`` refuses text of more than
4,300 digits with a ``ValueError`` (and would take quadratic time below that); no kernel
or daemon setting needs more than 20 digits, and the programs that read them fail on
overflow (``ERANGE``)."""


def to_int(text: str, base: int = 10, *, what: str = "number", source: str | None = None,
           line: int | None = None) -> int:
    """``int(text, base)`` for a number read from a host file: text longer than
    :data:`MAX_INT_DIGITS` is a :class:`ParseError` naming ``what`` and the place
    (``source``:``line``); other text ``int()`` refuses raises its ``ValueError``."""
    if len(text) > MAX_INT_DIGITS:
        raise ParseError(f"{what} of {len(text)} characters: too long to be a number "
                         f"(at most {MAX_INT_DIGITS} digits)", source=source, line=line)
    return int(text, base)
