"""Subordinate id ranges for rootless podman (:mod:`aiaudit.linux.containers.podman`)."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from aiaudit.core.host import Host
from aiaudit.linux.containers import podman


def test_subid_total_adds_ranges_by_name_or_uid() -> None:
    text = "# c\nother:1:65536\ntrainer:100000:1000\nbad line\n1001:200000:64536\nx:y:z\n"
    assert podman.subid_total(text, "trainer", 1001) == (65536, 3)
    assert podman.subid_total(text, "nobody", 9) == (0, None)


def test_subids_of_both_files(make_root) -> None:
    root = make_root({"/etc/subuid": "trainer:100000:65536\n"})
    assert podman.subids(Host(str(root)), "trainer", 1001) == {
        "/etc/subuid": (65536, 1), "/etc/subgid": (0, None)}
    assert not podman.podman_installed(Host(str(root)))


@given(st.text())
@example("u:1:\u00b2")  # a digit to str.isdigit, not to int()
def test_any_text_gives_a_total(text: str) -> None:
    total, line = podman.subid_total(text, "u", 1)
    assert total >= 0 and (line is None or line >= 1)
