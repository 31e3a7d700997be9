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
    """The definition of :data:`FUNCTION` ``FILE OPERATION LINE...`` for the operations
    named in ``ops`` (with one operation, its awk program alone; with several, a ``case``
    over them): each ``LINE`` in turn, a file that does not exist read as empty
    (``comment-swap`` leaves it absent), the file saved once as ``FILE.aiaudit-bak`` before
    its first change and written through."""
    names = list(dict.fromkeys(edits.split(op)[0] for op in ops))
    out = [f"{FUNCTION}() {{  # FILE OPERATION LINE...: the edits aiaudit remediate's "
           "install.sh makes",
           '    f=$1 op=$2; shift 2',
           '    for l do',
           '        src=$f; [ -f "$f" ] || src=/dev/null']
    if edits.COMMENT_SWAP in names:
        out.append(f'        [ -f "$f" ] || [ "$op" != {edits.COMMENT_SWAP} ] || return 0')
    if len(names) == 1:
        out.append(f"        AIAUDIT_LINE=$l awk '{_AWK[names[0]]}' \"$src\" > \"$f.aiaudit-new\""
                   " || return 1")
    else:
        out.append('        case "$op" in')
        out += [f"        {name}) AIAUDIT_LINE=$l awk '{_AWK[name]}' \"$src\" ;;"
                for name in names]
        out.append('        esac > "$f.aiaudit-new" || return 1')
    out += ['        cmp -s "$f.aiaudit-new" "$f" || { [ -e "$f.aiaudit-bak" ] || cp -p "$f" '
            '"$f.aiaudit-bak" 2>/dev/null; cat "$f.aiaudit-new" > "$f"; }',
            '        rm -f "$f.aiaudit-new"',
            '    done',
            "}"]
    return "\n".join(out)


def calls(ops: list[tuple[str, str]]) -> list[str]:
    """The lines that make the edits ``ops`` (``(path, operation)``, in order) with
    :func:`function`: one line per file and operation, its lines as arguments in order."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for path, op in ops:
        name, _kw, line = edits.split(op)
        grouped.setdefault((path, name), []).append(line)
    return [" ".join([FUNCTION, shlex.quote(path), name, *map(shlex.quote, lines)])
            for (path, name), lines in grouped.items()]
