"""udev rules parsing and three-valued matching."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.udev import rules as up

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


@given(st.text("ab*?[]!|\\-", max_size=8), st.text("ab*?[]\\-\n", max_size=6))
def test_pattern_match_is_fnmatchcase(pattern: str, value: str) -> None:
    # the fast paths (plain word, "prefix*") decide as fnmatch would
    import fnmatch

    want = any(fnmatch.fnmatchcase(value, alt) for alt in pattern.split("|"))
    assert up.pattern_match(pattern, value) is want


def _reference_writes(rules: list[up.Rule], dev: up.Device, attr: str) -> list[tuple]:
    """attr_writes without the pre-filter: every rule is matched (udev-rules.c order)."""
    out, skip_to, skip_file, doubt_until = [], None, "", None
    for rule in rules:
        label = next((t.value for t in rule.tokens if t.key == "LABEL"), None)
        if skip_to is not None:
            if rule.file != skip_file:
                skip_to = None
            elif label != skip_to:
                continue
            else:
                skip_to = None
        if doubt_until is not None and (rule.file != skip_file or label == doubt_until):
            doubt_until = None
        ok, _why = up.rule_matches(rule, dev)
        if ok is False:
            continue
        certain = ok is True and doubt_until is None
        out += [(t.value, rule.line, certain) for t in rule.assigns("ATTR", attr)
                if t.op in ("=", ":=")]
        goto = next((t.value for t in rule.tokens if t.key == "GOTO"), None)
        if goto is not None:
            skip_file = rule.file
            if certain:
                skip_to = goto
            elif doubt_until is None:
                doubt_until = goto
    return out


_TOKENS = ('KERNEL=="nvme*"', 'KERNEL!="sd*"', 'KERNEL=="sda|vd*"', 'ACTION=="add"',
           'ENV{ID_MODEL}=="x"', 'ATTR{queue/rotational}=="0"', 'ATTR{queue/scheduler}="none"',
           'ATTR{queue/scheduler}:="bfq"', 'ATTR{queue/scheduler}+="x"', 'GOTO="end"',
           'LABEL="end"', 'NAME="y"', 'SUBSYSTEM!="block"')


@given(st.lists(st.tuples(st.sampled_from(["/a.rules", "/b.rules"]),
                          st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=3)),
                max_size=12),
       st.sampled_from(["nvme0n1", "sda", "vdb"]))
def test_attr_writes_skip_changes_nothing(lines: list, name: str) -> None:
    rules: list[up.Rule] = []
    for f in ("/a.rules", "/b.rules"):
        rules += up.parse("\n".join(", ".join(t) for g, t in lines if g == f), f)[0]
    dev = up.Device(name, attrs={"queue/rotational": "0"})
    got = [(w.value, w.rule.line, w.certain)
           for w in up.attr_writes(rules, dev, "queue/scheduler")]
    assert got == _reference_writes(rules, dev, "queue/scheduler")


_OLD_TOKEN = re.compile(
    r'\s*([A-Za-z_]+)(?:\{([^}]*)\})?\s*(==|!=|\+=|-=|:=|=)\s*[a-z]?"((?:[^"\\]|\\.)*)"\s*(,|$)')


@given(st.lists(st.sampled_from(['A', 'B{x}', '=', '==', '+=', '"', '\\', '\\"', ',', ' ', 'x',
                                  '\n', '}', '\t']), max_size=14).map("".join))
@example('A="\\""')
@example('A="x\\\\", B="y\\"z"')
@settings(max_examples=400)
def test_token_regex_matches_the_plain_one(text: str) -> None:
    # the unrolled value pattern accepts and splits exactly as the readable one
    for pos in range(len(text) + 1):
        a, b = up._TOKEN().match(text, pos), _OLD_TOKEN.match(text, pos)
        assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups()))
