"""Pure parsers: text in, data out; they raise only :class:`aiaudit.errors.ParseError`."""

from __future__ import annotations

import re
from typing import Callable


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
