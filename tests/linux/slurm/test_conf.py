"""slurm.conf parser and PropagateResourceLimits semantics."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.slurm import conf as slurm


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


@given(st.text(alphabet='aZ9_= "\t,.x', max_size=60))
def test_setting_pattern_matches_the_plain_one(line: str) -> None:
    """The linear-time key=value pattern finds exactly what the plain one finds."""
    import re

    from aiaudit.linux.slurm.conf import _SETTING, SETTING_PLAIN

    fast = [m.groups() for m in _SETTING().finditer(line)]
    plain = [m.groups() for m in re.finditer(SETTING_PLAIN, line)]
    assert fast == plain


def test_a_long_line_without_settings_is_parsed_in_linear_time() -> None:
    from tests.helpers import CpuTime

    with CpuTime() as t:
        assert slurm.parse("a" * 1_000_000 + "\n" + "NodeName=x\n")[0][0].value == "x"
    assert t.seconds < 2, f"{t.seconds:.2f} s of CPU"
