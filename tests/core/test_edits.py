"""In-place edits (``aiaudit.core.edits``): the awk programs install.sh runs and their Python
twins (which the checks use to prove a fix) agree on every input, and are idempotent."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core import edits

AWKS = [a for a in ("awk", "mawk", "gawk", "original-awk", "busybox") if shutil.which(a)]
PROGRAMS = {edits.COMMENT_SWAP: edits.AWK_COMMENT_SWAP, edits.SET_MOUNT: edits.AWK_SET_MOUNT,
            edits.SET_DIRECTIVE: edits.AWK_SET_DIRECTIVE}


def awk(op: str, text: str, prog: str = "awk") -> str:
    name, _key, line = edits.split(op)
    argv = [prog, PROGRAMS[name]] if prog != "busybox" else ["busybox", "awk", PROGRAMS[name]]
    p = subprocess.run(argv, input=text.encode("utf-8", "surrogateescape"), capture_output=True,
                       env={**os.environ, "AIAUDIT_LINE": line, "LC_ALL": "C"}, timeout=20,
                       check=True)
    return p.stdout.decode("utf-8", "surrogateescape")


SSHD = """\
# comment PasswordAuthentication yes
Include /etc/ssh/other/*.conf
passwordauthentication=yes
  PasswordAuthentication   no
PermitRootLogin yes
Match User alice
  PasswordAuthentication yes
Match all
PasswordAuthentication yes
"""
FSTAB = """\
UUID=1 / ext4 defaults 0 1
/swapfile none swap sw 0 0
# /old none swap sw 0 0
/dev/sdb2\tnone\tswap\tnoauto 0 0
tmpfs /dev/shm tmpfs size=64m 0 0
"""
CASES = [
    ("set-directive PasswordAuthentication no", SSHD),
    ("set-directive PermitRootLogin no", SSHD),
    ("set-directive X11Forwarding no", "X11Forwarding yes"),  # no final newline
    ("set-directive X11Forwarding no", ""),
    ("set-directive MaxAuthTries 3", "Match User x\n  MaxAuthTries 9\n"),
    (edits.COMMENT_SWAP, FSTAB),
    (edits.COMMENT_SWAP, ""),
    ("set-mount tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=50% 0 0", FSTAB),
    ("set-mount tmpfs /dev/shm tmpfs rw,size=4G 0 0", "tmpfs /dev/shm tmpfs rw,size=4G 0 0\n"),
]


def test_sshd_edit_semantics() -> None:
    out = edits.apply("set-directive PasswordAuthentication no", SSHD)
    assert out.splitlines() == [
        "# comment PasswordAuthentication yes", "Include /etc/ssh/other/*.conf",
        "# aiaudit: passwordauthentication=yes", "# aiaudit:   PasswordAuthentication   no",
        "PermitRootLogin yes", "PasswordAuthentication no", "Match User alice",
        "  PasswordAuthentication yes", "Match all", "PasswordAuthentication yes"]


@pytest.mark.parametrize("prog", AWKS)
@pytest.mark.parametrize("op, text", CASES)
def test_awk_and_python_agree_and_are_idempotent(prog: str, op: str, text: str) -> None:
    assert edits.valid(op)
    once = edits.apply(op, text)
    assert awk(op, text, prog) == once
    assert edits.apply(op, once) == once and awk(op, once, prog) == once


_LINE = st.lists(st.sampled_from(["a", "A", "P", " ", "\t", "=", "#", "/", "Match", "match",
                                   "swap", "none", "/dev/shm", "Password", "\xe9",
                                   "PasswordAuthentication", "PermitRootLogin", "no"]),
                 max_size=10).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINE, max_size=8), st.sampled_from([c[0] for c in CASES]))
def test_awk_and_python_agree_on_any_text(lines: list[str], op: str) -> None:
    text = "".join(ln + "\n" for ln in lines)
    once = edits.apply(op, text)
    assert awk(op, text) == once
    assert edits.apply(op, once) == once


def test_vocabulary_is_closed() -> None:
    for bad in ("rm -rf /", "comment-swap x", "set-directive", "set-directive P a\nb",
                "set-directive P a\x1b[2J", "set-mount a b c", "set-mount a b c d\x00",
                "set-directive 9x y", "comment-swap "):
        assert not edits.valid(bad), bad
