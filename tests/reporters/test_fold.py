"""aiaudit.reporters.fold: splitting a message at its subject's words."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.reporters import fold

_PIECES = ["ipv4", "IPv4", "boot", "Boot", "ipv4boot", "_", "-", " ", "/", "x", "4", "(",
           "running", "RUN", "runningx", "eth0", ".", "é"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=25).map("".join),
       st.lists(st.sampled_from(["ipv4", "boot", "Boot", "running", "run", "eth0", "x",
                                 "ipv4 boot", "a1_b"]), min_size=1, max_size=3).map(" ".join))
def test_a_message_is_split_as_the_pattern_splits_it(text: str, subject: str) -> None:
    words = sorted(set(re.findall(r"[A-Za-z][A-Za-z0-9_]+", subject)), key=len, reverse=True)
    pat = r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, words)) + r")(?![A-Za-z0-9_])"
    want = re.split(pat, text, flags=re.IGNORECASE) if words else [text]
    assert fold._parts(text, subject) == want


def test_ascii_text_is_split_without_a_pattern() -> None:
    assert fold._split_ascii("ipv4 (boot): IPV4boot boot.", ["ipv4", "boot"]) == \
        ["", "ipv4", " (", "boot", "): IPV4boot ", "boot", "."]
