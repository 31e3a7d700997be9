"""aiaudit.linux.systemd.bootcmds: splitting the Exec lines of enabled services."""

from __future__ import annotations

import shlex

from hypothesis import example, given
from hypothesis import strategies as st

from aiaudit.linux.systemd import bootcmds as tuning


@given(st.text(" \t\r\n\x0b\x0c\x85\xa0ab-='\"\\;|&", max_size=30))
@example("echo none > /sys/block/sda/queue/scheduler\x0b")
@example("a\xa0b 'c d'")
def test_words_are_shlex_words(text: str) -> None:
    try:
        want: object = shlex.split(text)
    except ValueError as exc:
        want = type(exc)
    try:
        got: object = tuning._words(text)
    except ValueError as exc:
        got = type(exc)
    assert got == want


def test_sh_c_scripts_split_into_commands() -> None:
    assert tuning._split("/bin/sh -c 'echo 1 > /sys/a; cpupower frequency-set -g performance'") \
        == [["echo", "1", ">", "/sys/a"], ["cpupower", "frequency-set", "-g", "performance"]]
    assert tuning._split("/usr/bin/cpupower idle-set -D 2") == [
        ["/usr/bin/cpupower", "idle-set", "-D", "2"]]

