# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""In-place edits a fix bundle makes to files it cannot replace whole (``/etc/fstab``,
an ``sshd_config`` without ``Include sshd_config.d``).

An edit snippet names an operation from the closed vocabulary below, never code: the
bundle's ``install.sh`` runs the fixed awk program of the operation (its arguments reach
awk through the environment, so no value is ever parsed as awk or shell), the playbook
uses the matching Ansible modules, and checks call the Python twin here to prove the edit
fixes what they report (``tests/test_edits.py`` runs both on the same inputs and compares).

Operations (the snippet's ``content``):

``comment-swap``
    comment out every active swap line of an fstab(5) file (third field ``swap``), as
    ``swapon -a`` and systemd-fstab-generator would read it; other lines untouched.
``set-mount SPEC FILE VFSTYPE OPTIONS [FREQ [PASSNO]]``
    make the given line the fstab(5) entry of its mount point: comment out every other
    active line for that mount point and append the line unless it is there already.
``set-directive KEYWORD VALUE...``
    for a first-value-wins file (sshd_config(5)): comment out (``# aiaudit: ``) each global
    ``KEYWORD`` line (before the first ``Match``) other than the wanted one, and insert
    ``KEYWORD VALUE...`` before the first ``Match`` (at the end without one) unless the
    wanted line is already there.  Keywords compare case-insensitively and end at
    whitespace or ``=``, as sshd's parser splits them.

Both are idempotent: applying one twice changes nothing the second time.
"""

from __future__ import annotations

import re

COMMENT_SWAP = "comment-swap"
SET_MOUNT = "set-mount"
SET_DIRECTIVE = "set-directive"
MARK = "# aiaudit: "
"""Prefix of a line an edit commented out."""

_PRINT = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]"
"""A character every context can carry (no control character, no line separator)."""
_WORD = r"[^\s\x00-\x1f\x7f-\x9f\u2028\u2029]+"
_OP = re.compile(rf"^(?:comment-swap|set-mount {_WORD}(?: {_WORD}){{3}}(?: [0-9]+){{0,2}}"
                 rf"|set-directive [A-Za-z][A-Za-z0-9]* {_PRINT}+)$")


def valid(op: str) -> bool:
    """True for an operation of the vocabulary, with printable arguments only."""
    return bool(_OP.match(op)) and op == op.rstrip()


def set_directive_op(line: str) -> str:
    """The ``set-directive`` operation that makes ``line`` (``Keyword value``) win."""
    return f"{SET_DIRECTIVE} {line}"


def split(op: str) -> tuple[str, str, str]:
    """``(name, key, line)`` of a valid operation: the keyword or mount point, and the
    wanted line (both empty for ``comment-swap``)."""
    name, _, rest = op.partition(" ")
    if name == SET_MOUNT:
        return name, rest.split(" ")[1], rest
    return name, rest.partition(" ")[0], rest


def _lines(text: str) -> list[str]:
    """Lines as awk reads them: split at newline only, a final newline ends the last."""
    out = text.split("\n")
    return out[:-1] if out[-1] == "" else out


def _keyword(line: str) -> str:
    s = line.lstrip(" \t")
    return re.split(r"[ \t=]", s, maxsplit=1)[0].lower()


def comment_swap(text: str) -> str:
    """Python twin of the ``comment-swap`` awk program."""
    out = []
    for line in _lines(text):
        f = _fields(line)
        if f and not f[0].startswith("#") and len(f) >= 3 and f[2] == "swap":
            line = "#" + line
        out.append(line)
    return "".join(ln + "\n" for ln in out)


def _fields(line: str) -> list[str]:
    return [w for w in re.split(r"[ \t]+", line) if w]


def set_mount(text: str, line: str) -> str:
    """Python twin of the ``set-mount`` awk program."""
    mp = _fields(line)[1]
    out, done = [], False
    for raw in _lines(text):
        f = _fields(raw)
        if f and not f[0].startswith("#") and len(f) >= 2 and f[1] == mp:
            if raw == line and not done:
                done = True
                out.append(raw)
            else:
                out.append("#" + raw)
            continue
        out.append(raw)
    if not done:
        out.append(line)
    return "".join(ln + "\n" for ln in out)


def set_directive(text: str, line: str) -> str:
    """Python twin of the ``set-directive`` awk program."""
    kw = _keyword(line)
    out: list[str] = []
    done = in_match = False
    for raw in _lines(text):
        k = _keyword(raw)
        if not in_match and k == "match":
            if not done:
                out.append(line)
                done = True
            in_match = True
        if not in_match and k == kw:
            if raw == line and not done:
                done = True
                out.append(raw)
            else:
                out.append(MARK + raw)
            continue
        out.append(raw)
    if not done:
        out.append(line)
    return "".join(ln + "\n" for ln in out)


def apply(op: str, text: str) -> str:
    """The file text after operation ``op`` (valid, see :func:`valid`)."""
    name, _kw, line = split(op)
    if name == COMMENT_SWAP:
        return comment_swap(text)
    return set_mount(text, line) if name == SET_MOUNT else set_directive(text, line)


# awk programs: fixed text, arguments from the environment (ENVIRON, not -v, which
# would interpret backslash escapes); POSIX awk (mawk, gawk, busybox).
AWK_COMMENT_SWAP = r"""NF >= 3 && substr($1, 1, 1) != "#" && $3 == "swap" { print "#" $0; next }
{ print }"""
AWK_SET_MOUNT = r"""BEGIN { line = ENVIRON["AIAUDIT_LINE"]; split(line, w); mp = w[2] }
NF >= 2 && substr($1, 1, 1) != "#" && $2 == mp {
    if ($0 == line && !done) { done = 1; print } else print "#" $0; next }
{ print }
END { if (!done) print line }"""
AWK_SET_DIRECTIVE = r"""function key(s) { sub(/^[ \t]+/, "", s); sub(/[ \t=].*$/, "", s); return tolower(s) }
BEGIN { line = ENVIRON["AIAUDIT_LINE"]; kw = key(line) }
{ k = key($0); if (!inmatch && k == "match") { if (!done) print line; done = inmatch = 1 } }
!inmatch && k == kw { if ($0 == line && !done) { done = 1; print } else print "# aiaudit: " $0; next }
{ print }
END { if (!done) print line }"""  # noqa: E501 (one awk rule a line: the pasted block is short)
