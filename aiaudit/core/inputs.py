# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Files the user hands to aiaudit (rulesets, waivers, saved reports): not the scanned host,
but still read defensively: regular files only, size-capped, UTF-8, one clear error."""

from __future__ import annotations

import os
import stat

from aiaudit.core.errors import UsageError


def read_input(path: str, what: str, limit: int) -> str:
    """Read an input file the user named (regular files only, at most
    ``limit`` bytes); ``what`` names it in messages."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read {what}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"{path}: not a regular file")
    if st.st_size > limit:
        raise UsageError(f"{path}: {st.st_size} bytes is too large for a {what} (limit {limit})")
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read {what}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text (byte {exc.start})") from None


MAX_DEPTH = 100
"""Deepest nesting accepted in a saved report (a real one nests about 6 levels); schema
validation walks the data recursively, with Python's limit of 1,000 frames."""


def too_deep(data: object, limit: int = MAX_DEPTH) -> bool:
    """Whether decoded JSON ``data`` nests deeper than ``limit`` (walked without recursion)."""
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False
