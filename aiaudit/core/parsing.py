# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Pure parsers: text in, data out; they raise only :class:`aiaudit.core.errors.ParseError`."""

from __future__ import annotations

import re
from typing import Callable

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


def lazy_pattern(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """A regular expression compiled on first use: ``_X = lazy_pattern(r"...")``, then
    ``_X().match(text)``.  A scan imports parsers for files most hosts do not have (GRUB
    menus, NVIDIA driver versions, wheel names); compiling each of their expressions at
    import costs about 0.1 ms, paid even when nothing is parsed."""
    compiled: list[re.Pattern[str]] = []

    def get() -> re.Pattern[str]:
        if not compiled:
            compiled.append(re.compile(pattern, flags))
        return compiled[0]

    return get
