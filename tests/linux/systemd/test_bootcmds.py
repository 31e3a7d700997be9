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


def test_an_active_profile_of_thousands_of_words_is_refused(tmp_path) -> None:
    from aiaudit.core.host import Host
    from aiaudit.linux.tuned import profiles as tuned

    root = tmp_path / "root"
    (root / "etc/tuned").mkdir(parents=True)
    (root / "etc/tuned/active_profile").write_text(" ".join(f"p{i}" for i in range(5000)))
    state = tuned.load(Host(str(root)))
    assert state.profile is None and state.names == ()
    assert any("more than 32" in p for p in state.problems)
