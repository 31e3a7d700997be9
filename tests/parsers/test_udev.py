"""udev rules parsing and three-valued matching."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.errors import ParseError
from aiaudit.parsers import udev as up

NVME = up.Device("nvme0n1", attrs={"queue/rotational": "0"})
SDA = up.Device("sda", attrs={"queue/rotational": "0"})


def _rules(text: str, file: str = "/etc/udev/rules.d/60-x.rules") -> list[up.Rule]:
    rules, warnings = up.parse(text, file)
    assert not warnings
    return rules


def test_parse_tokens_and_continuation() -> None:
    rules = _rules('# c\nACTION=="add|change", KERNEL=="nvme*", \\\n'
                   '  ATTR{queue/scheduler}="none"\n')
    assert len(rules) == 1 and rules[0].line == 2
    assert [str(t) for t in rules[0].tokens] == [
        'ACTION=="add|change"', 'KERNEL=="nvme*"', 'ATTR{queue/scheduler}="none"']


def test_invalid_line_warns() -> None:
    rules, warnings = up.parse('KERNEL=="sda" garbage\nKERNEL=="x", NAME="y"\n', "f")
    assert len(rules) == 1 and warnings == ["f:1: invalid rule, udev ignores it"]


def test_alternatives_globs_and_negation() -> None:
    assert up.pattern_match("sd*|nvme[0-9]*n[0-9]*", "nvme0n1")
    assert not up.pattern_match("sd[a-z]", "nvme0n1")
    r = _rules('KERNEL!="sd*", ATTR{queue/scheduler}="none"\n')
    assert up.rule_matches(r[0], NVME)[0] is True
    assert up.rule_matches(r[0], SDA)[0] is False


def test_attr_match_uses_known_attributes() -> None:
    r = _rules('ATTR{queue/rotational}=="0", ATTR{queue/scheduler}="none"\n')
    assert up.rule_matches(r[0], NVME)[0] is True
    assert up.rule_matches(r[0], up.Device("sdb", attrs={"queue/rotational": "1"}))[0] is False


def test_unknown_match_is_undecided() -> None:
    r = _rules('ENV{ID_MODEL}=="Samsung*", ATTR{queue/scheduler}="bfq"\n')
    ok, why = up.rule_matches(r[0], NVME)
    assert ok is None and str(why[0]) == 'ENV{ID_MODEL}=="Samsung*"'
    writes = up.attr_writes(r, NVME, "queue/scheduler")
    last, doubt = up.effective(writes)
    assert last is None and doubt[0].value == "bfq" and "ENV{ID_MODEL}" in doubt[0].why


def test_later_write_wins_and_goto_skips() -> None:
    rules = _rules('KERNEL=="nvme*", GOTO="end"\nATTR{queue/scheduler}="bfq"\nLABEL="end"\n'
                   'KERNEL=="nvme*n*", ATTR{queue/scheduler}="none"\n')
    last, doubt = up.effective(up.attr_writes(rules, NVME, "queue/scheduler"))
    assert last is not None and last.value == "none" and not doubt
    last, _ = up.effective(up.attr_writes(rules, SDA, "queue/scheduler"))
    assert last is not None and last.value == "bfq"


def test_undecided_goto_makes_skipped_writes_uncertain() -> None:
    rules = _rules('ENV{ID_BUS}=="ata", GOTO="end"\nATTR{queue/scheduler}="bfq"\nLABEL="end"\n')
    writes = up.attr_writes(rules, NVME, "queue/scheduler")
    assert [(w.value, w.certain) for w in writes] == [("bfq", False)]
    assert "GOTO" in writes[0].why


def test_goto_does_not_leave_its_file() -> None:
    a = _rules('GOTO="nowhere"\n', "/etc/udev/rules.d/10-a.rules")
    b = _rules('ATTR{queue/scheduler}="none"\n', "/etc/udev/rules.d/20-b.rules")
    last, _ = up.effective(up.attr_writes(a + b, NVME, "queue/scheduler"))
    assert last is not None and last.value == "none"


@given(st.text(max_size=200))
def test_never_crashes(text: str) -> None:
    try:
        rules, _ = up.parse(text, "f")
    except ParseError:
        return
    up.attr_writes(rules, NVME, "queue/scheduler")
