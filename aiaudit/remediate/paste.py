"""Shell a person pastes, as root, to make a fix's in-place edits: the same operations of
:mod:`aiaudit.core.edits` that the bundle's ``install.sh`` runs (the same awk programs,
their argument through the environment, so nothing in a value is parsed as awk or shell),
a copy of the file kept first, the file written through (owner, mode and hard links kept).

Idempotent like the bundle: pasting a block twice changes nothing the second time.
"""

from __future__ import annotations

import shlex

from aiaudit.core import edits

FUNCTION = "aiaudit_edit"
"""Name of the shell function a block defines once and calls per edit."""

_AWK = {edits.COMMENT_SWAP: edits.AWK_COMMENT_SWAP, edits.SET_MOUNT: edits.AWK_SET_MOUNT,
        edits.SET_DIRECTIVE: edits.AWK_SET_DIRECTIVE}


def function(ops: list[str]) -> str:
    """The definition of :data:`FUNCTION` ``FILE OPERATION LINE`` for the operations named
    in ``ops`` (a ``case`` over each, with its awk program): a file that does not exist is
    read as empty (``comment-swap`` leaves it absent), the file is saved once as
    ``FILE.aiaudit-bak`` before its first change and written through."""
    names = list(dict.fromkeys(edits.split(op)[0] for op in ops))
    out = [f"{FUNCTION}() {{  # FILE OPERATION LINE: the edit aiaudit remediate's "
           "install.sh makes",
           '    src=$1; [ -f "$1" ] || src=/dev/null']
    if edits.COMMENT_SWAP in names:
        out.append(f'    [ -f "$1" ] || [ "$2" != {edits.COMMENT_SWAP} ] || return 0')
    out.append('    case "$2" in')
    out += [f"    {name}) AIAUDIT_LINE=$3 awk '{_AWK[name]}' \"$src\" ;;" for name in names]
    out += ['    esac > "$1.aiaudit-new" || return 1',
            '    cmp -s "$1.aiaudit-new" "$1" || { [ -e "$1.aiaudit-bak" ] || cp -p "$1" '
            '"$1.aiaudit-bak" 2>/dev/null; cat "$1.aiaudit-new" > "$1"; }',
            '    rm -f "$1.aiaudit-new"',
            "}"]
    return "\n".join(out)


def call(path: str, op: str) -> str:
    """The line that makes edit ``op`` to ``path`` with :func:`function`."""
    name, _kw, line = edits.split(op)
    return f"{FUNCTION} {shlex.quote(path)} {name} {shlex.quote(line)}"
