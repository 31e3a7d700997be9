"""slurm.conf parser and PropagateResourceLimits semantics."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.errors import ParseError
from aiaudit.parsers import slurm


def test_pairs_includes_continuations() -> None:
    items, inc = slurm.parse("ClusterName=c # x\nNodeName=n[1-4] CPUs=8 \\\n  State=UNKNOWN\n"
                             "include cgroup.conf\nPropagateResourceLimitsExcept=MEMLOCK\n")
    assert [(s.key, s.value, s.line) for s in items] == [
        ("ClusterName", "c", 1), ("NodeName", "n[1-4]", 2), ("CPUs", "8", 2),
        ("State", "UNKNOWN", 2), ("PropagateResourceLimitsExcept", "MEMLOCK", 5)]
    assert inc == [(4, "cgroup.conf")]


def test_propagated() -> None:
    assert "MEMLOCK" in slurm.propagated(None, None)[0]
    assert slurm.propagated("NONE", None) == (set(), None)
    assert slurm.propagated("NOFILE,core", None) == ({"NOFILE", "CORE"}, None)
    names, err = slurm.propagated(None, "MEMLOCK")
    assert err is None and "MEMLOCK" not in names and "NOFILE" in names
    assert slurm.propagated("ALL", "MEMLOCK")[1]
    assert slurm.propagated("BOGUS", None)[1]


@given(st.text(max_size=2000))
def test_any_text(text: str) -> None:
    try:
        slurm.parse(text)
    except ParseError:
        assert "\x00" in text
