"""modprobe.d(5) and modules-load.d(5) file formats (:mod:`aiaudit.linux.kmod.modprobe`);
every parser gives a value or a ParseError for any text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.kmod import modprobe


def test_modprobe() -> None:
    cmds = modprobe.parse_modprobe("# x\nblacklist nouveau\noptions nouveau \\\n modeset=0\n")
    assert [(c.command, c.args, c.line) for c in cmds] == [
        ("blacklist", ("nouveau",), 2), ("options", ("nouveau", "modeset=0"), 3)]
    assert modprobe.parse_modules_load("; c\nnvidia-peermem\n# x\n") == [("nvidia-peermem", 2)]
    assert modprobe.norm("nvidia-peermem") == "nvidia_peermem"


@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    for fn in (modprobe.parse_modprobe, modprobe.parse_modules_load):
        try:
            fn(text)
        except ParseError:
            pass
