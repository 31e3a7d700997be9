"""dnf-automatic's ``apply_updates`` (:mod:`aiaudit.linux.packages.dnf`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.linux.packages import dnf


def test_apply_updates_last_assignment_wins() -> None:
    text = "[commands]\napply_updates = yes\n# x\napply_updates=No\n"
    assert dnf.apply_updates(text) == (False, 4, "apply_updates=No")
    assert dnf.apply_updates("[commands]\n apply_updates = True \n") == (
        True, 2, "apply_updates = True")
    assert dnf.apply_updates("") == (False, None, "")


@given(st.text())
def test_any_text_gives_a_value(text: str) -> None:
    apply, line, _ = dnf.apply_updates(text)
    assert isinstance(apply, bool) and (line is None or line >= 1)
