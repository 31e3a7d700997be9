"""tuned.conf parsing and profile merging."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.tuned import conf as tp


def test_parse_sections_include_and_types() -> None:
    p = tp.parse("[main]\ninclude=throughput-performance, other ;third\n\n[cpu]\n"
                 "governor=performance|powersave\n# c\n[my_cpu]\ntype=cpu\nforce_latency=1\n"
                 "[off]\ntype=cpu\nenabled=false\nforce_latency=99\n", "p", "/x/tuned.conf")
    assert p.includes == ["throughput-performance", "other", "third"]
    assert p.get("cpu", "governor").value == "performance|powersave"
    assert p.get("cpu", "force_latency").value == "1"       # disabled unit ignored
    assert p.get("cpu", "governor").line == 5


def test_merge_later_overrides_and_replace() -> None:
    base = tp.parse("[cpu]\ngovernor=powersave\nforce_latency=100\n[vm]\na=1\n", "base")
    top = tp.parse("[cpu]\ngovernor=performance\n[vm]\nreplace=1\nb=2\n", "top")
    m = tp.merge([base, top])
    assert m.get("cpu", "governor").value == "performance"
    assert m.get("cpu", "force_latency").value == "100"
    assert m.get("vm", "a") is None and m.get("vm", "b").value == "2"


def test_rejects_garbage() -> None:
    with pytest.raises(ParseError):
        tp.parse("[cpu]\nthis is not an option\n", "x")


@given(st.text(max_size=200))
def test_never_crashes(text: str) -> None:
    try:
        tp.parse(text, "x")
    except ParseError:
        pass
