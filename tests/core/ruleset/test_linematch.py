"""The linear-time line matcher (aiaudit.core.ruleset.linematch): whole lines searched, one
work budget, the required-literal prefilter agreeing with the VM (issue 25)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.ruleset.linematch import MAX_STEPS, Budget, TooCostly, compile_pattern
from tests.helpers import CpuTime

_ATOMS = st.sampled_from(["a", "b", "ab", "NO", ".", "[ab]", "[^a]", r"\d", r"\s", "(a|b)",
                          "(ab|c)", "(xa)", r"\bx", "x"])
_QUANT = st.sampled_from(["", "", "*", "+", "?", "{1,2}"])


def _lines_re(pattern: str, text: str, flags: int = 0) -> tuple[int, str] | None:
    """What ``first_line`` must answer, by Python's re: lines end at a line feed, a
    carriage return before it is dropped."""
    body = text[:-1] if text.endswith("\n") else text
    for n, line in enumerate(body.split("\n"), 1):
        line = line[:-1] if line.endswith("\r") else line
        if re.search(pattern, line, flags):
            return n, line
    return None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ATOMS, _QUANT), min_size=1, max_size=4), st.booleans(),
       st.booleans(), st.text(alphabet="abxNO1 c\n\r\x0b", max_size=40))
def test_first_line_agrees_with_re(parts, bol: bool, eol: bool, text: str) -> None:
    """Over whole texts, with the required literal looked for first (``ab``, ``NO``,
    ``xa``), the first matching line is the one re finds line by line."""
    pat = ("^" if bol else "") + "".join(a + q for a, q in parts) + ("$" if eol else "")
    got = compile_pattern(pat).first_line(text, Budget())
    assert got == _lines_re(pat, text), (pat, text, compile_pattern(pat).required)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["NOPASSWD", "nopasswd:", "Storage=NONE", "\u017f", "K", "stra\xdfe"]),
       st.text(alphabet="NOPASSWDnopasswd:= Kk\u017f\xdfsS\u212a\n", max_size=40))
def test_ignore_case_prefilter_agrees_with_the_vm(literal: str, text: str) -> None:
    """With ``ignore_case`` the literal is looked for in the folded text exactly as the VM
    compares it (line by line, without the prefilter)."""
    pat = compile_pattern(literal, ignore_case=True)
    want = None
    for n, line in enumerate(text.split("\n"), 1):
        if pat._run(pat._text(line), Budget()):
            want = (n, line)
            break
    if want is not None and text.endswith("\n") and want[0] == text.count("\n") + 1:
        want = None  # (the empty "line" after a final line feed matches nothing anyway)
    assert pat.first_line(text, Budget()) == want


def test_required_literal() -> None:
    assert compile_pattern(r"^\s*Storage\s*=\s*none\s*$").required == "Storage"
    assert compile_pattern(r"ALL=\(ALL\) NOPASSWD").required == "ALL=(ALL) NOPASSWD"
    assert compile_pattern("ALL=(ALL) NOPASSWD").required == "ALL=ALL NOPASSWD"  # a group
    assert compile_pattern(r"github\.com").required == "github.com"
    assert compile_pattern("(a|b)c").required == "c"
    assert compile_pattern("(x.)*").required is None
    assert compile_pattern("NoPass", ignore_case=True).required == "nopass"


def test_every_character_of_a_long_line_is_searched() -> None:
    line = "x" * 200_000 + "NOPASSWD"
    assert compile_pattern("NOPASSWD").search(line)
    assert compile_pattern(r"[N]OPASSWD$").search(line)
    assert compile_pattern(r"x{3}N").first_line("a\n" + line + "\n", Budget()) == (2, line)


def test_the_budget_bounds_the_work_and_says_so() -> None:
    """A costly program on a long line: stopped at the budget (TooCostly, never "no
    match"), within about a second of CPU."""
    pat = compile_pattern("(.{0,99}x){19}")
    assert len(pat.prog) > 3000 and pat.required is None
    with CpuTime() as t, pytest.raises(TooCostly, match="more than 2,000,000 matching steps"):
        pat.first_line("a" * 100_000, Budget())
    assert t.seconds < 3, f"{t.seconds:.1f} s of CPU"
    budget = Budget(1000)
    with pytest.raises(TooCostly):
        compile_pattern(r"\d+[yz]").first_line("1" * 2000, budget)
    assert compile_pattern(r"\d+z").first_line("1" * 2000, Budget(1)) is None  # no "z"
    assert budget.left < 0
    assert MAX_STEPS == Budget().limit


def test_one_budget_is_shared_by_the_patterns_of_a_rule() -> None:
    budget = Budget(10_000)
    text = "a" * 3000 + "\n"
    assert compile_pattern(r"a\d").first_line(text, budget) is None
    spent = budget.limit - budget.left
    assert 3000 < spent < 10_000
    with pytest.raises(TooCostly):  # the second pattern gets only what is left
        compile_pattern(r"a\d").first_line(text * 3, budget)


def test_lines_of_a_file_of_line_feeds_are_bounded() -> None:
    """Four million empty lines: the per-line work is charged too, so a pattern without a
    literal stops at the budget instead of looping for seconds."""
    with CpuTime() as t, pytest.raises(TooCostly):
        compile_pattern(r"^\d").first_line("\n" * 4_000_000, Budget())
    assert t.seconds < 3, f"{t.seconds:.1f} s of CPU"
    assert compile_pattern(r"^\d").first_line("\n" * 1000 + "7\n", Budget()) == (1001, "7")


_ICASE_ATOMS = st.sampled_from(["a", "B", "k", "\u212a", "\xdf", "[ab]", "[A-C]", r"\d", r"\s",
                                r"\w", "[^a]", ".", "(a|K)", "x", "S"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ICASE_ATOMS, _QUANT), min_size=1, max_size=3), st.booleans(),
       st.text(alphabet="abBkK\u212a\xdfsS x1\u0663\xb2\n", max_size=40))
def test_the_first_character_skip_agrees_with_the_plain_vm(parts, icase: bool,
                                                           text: str) -> None:
    """Where no thread is alive the VM jumps to the next character a match can start with
    (Python's re over one class): the same answer as stepping through every character,
    with ``ignore_case`` and without."""
    pat = "".join(a + q for a, q in parts)
    fast = compile_pattern(pat, ignore_case=icase)
    plain = compile_pattern(pat, ignore_case=icase)
    plain.first = None
    for line in text.split("\n"):
        assert fast.search(line) == plain.search(line), (pat, icase, line, fast.first)


def test_first_characters_and_what_they_save() -> None:
    """The first-character class of some patterns (None where a match may start anywhere),
    and a pattern without a literal deciding a 4 MB file quickly: it ran the VM at every
    character before, and ran out of its budget."""
    first = {p: (compile_pattern(p).first or re.compile("")).pattern
             for p in (r"[Zz]{3}", r"\s[Nn]", r"x*y", r"\d", r"^\s*$", r"[^a]b", "(.x)+")}
    assert first == {r"[Zz]{3}": r"[\U0000005a\U0000007a]", r"\s[Nn]": r"[\s]",
                     r"x*y": r"[\U00000079\U00000078]", r"\d": r"[\d]", r"^\s*$": "",
                     r"[^a]b": "", "(.x)+": ""}
    assert compile_pattern("K", ignore_case=True).first.pattern == r"[\U0000006b]"
    assert compile_pattern("[A-Z]", ignore_case=True).first is None  # folded ranges: none
    text = "".join(f"Defaults env_reset,mail_badpass {i}\n" for i in range(110_000))
    with CpuTime() as t:
        assert compile_pattern(r"[Zz]{3}").first_line(text, Budget()) is None
    assert t.seconds < 2, f"{t.seconds:.1f} s of CPU"


def test_digits_are_what_re_calls_digits() -> None:
    """``\\d`` is ``str.isdecimal`` as in Python's re: an Arabic-Indic three is a digit, a
    superscript two or a circled one is not."""
    for ch, want in (("5", True), ("\u0663", True), ("\xb2", False), ("\u2460", False)):
        assert compile_pattern(r"\d").search(ch) is want is bool(re.search(r"\d", ch))
        assert compile_pattern(r"\D").search(ch) is not want
