# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""A regular-expression matcher that cannot hang: line patterns of rulesets, in linear time.

Python's ``re`` backtracks: ``(a+)+$`` is exponential and even ``a*a*b`` is cubic (36 s on
one 4096-character line, measured), so a pattern from a ruleset could stall a scan on a
hostile file.  Here a pattern is parsed with Python's own regex parser (the syntax users
know), then compiled to a Thompson NFA and run as a Pike VM: every position of the line
advances a set of at most ``len(program)`` threads, so a search costs
O(len(line) x len(program)) whatever the pattern.

Supported: literals, ``.``, classes (``[a-z]``, ``[^...]``, ``\\d \\s \\w`` and their
negations), groups (captures are not reported), alternation, ``* + ? {m,n}`` (lazy forms
match the same lines), ``^``/``$``/``\\A``/``\\Z`` and ``\\b``/``\\B``.  Refused with a
clear message (a ruleset error, not a slow scan): backreferences, look-around, atomic
groups and possessive quantifiers, inline flags, a bounded repeat above
:data:`MAX_COUNT`, and programs above :data:`MAX_PROGRAM` instructions.  ``ignore_case``
compares case-folded characters.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

# the regular expression parser's own modules (private: typed Any, by name)
try:  # Python >= 3.11
    _c: Any = importlib.import_module("re._constants")
    _p: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - Python 3.10
    _c = importlib.import_module("sre_constants")
    _p = importlib.import_module("sre_parse")

MAX_PATTERN = 512
"""Characters in one pattern."""
MAX_COUNT = 100
"""Largest bound of a ``{m,n}`` repeat (it is expanded into copies)."""
MAX_PROGRAM = 4000
"""Instructions in a compiled pattern (the per-character cost of a search)."""
MAX_LINE = 65536
"""Characters of one line that are searched; a longer line is searched in its first
``MAX_LINE`` characters (the caller says so)."""

_CHAR, _SPLIT, _JMP, _ASSERT, _MATCH = range(5)


class PatternError(ValueError):
    """The pattern is not valid or not supported by this matcher."""


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_CATEGORY: dict[Any, Callable[[str], bool]] = {
    _c.CATEGORY_DIGIT: str.isdigit,
    _c.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdigit(),
    _c.CATEGORY_SPACE: str.isspace,
    _c.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    _c.CATEGORY_WORD: _word,
    _c.CATEGORY_NOT_WORD: lambda ch: not _word(ch),
}


class Pattern:
    """A compiled line pattern; :meth:`search` is True when some part of a line matches."""

    def __init__(self, pattern: str, *, ignore_case: bool = False) -> None:
        if not isinstance(pattern, str):
            raise PatternError("a pattern must be a string")
        if len(pattern) > MAX_PATTERN:
            raise PatternError(f"pattern longer than {MAX_PATTERN} characters")
        try:
            parsed = _p.parse(pattern, 0)
        except Exception as exc:  # re.error and friends
            raise PatternError(f"invalid pattern: {exc}") from None
        flags = getattr(parsed, "state", None)
        if flags is not None and (flags.flags & ~_c.SRE_FLAG_UNICODE):
            raise PatternError("inline flags such as (?i) are not supported (use "
                               "ignore_case)")
        self.source = pattern
        self.icase = ignore_case
        self.prog: list[tuple[Any, ...]] = []
        self._emit_seq(list(parsed))
        self._add((_MATCH,))

    # -------------------------------------------------------------- compiling
    def _add(self, ins: tuple[Any, ...]) -> int:
        if len(self.prog) >= MAX_PROGRAM:
            raise PatternError(f"pattern too complex (more than {MAX_PROGRAM} steps)")
        self.prog.append(ins)
        return len(self.prog) - 1

    def _fold(self, ch: str) -> str:
        return ch.casefold() if self.icase else ch

    def _char_test(self, op: Any, av: Any) -> Callable[[str], bool]:
        if op is _c.LITERAL:
            want = self._fold(chr(av))
            return lambda ch: ch == want
        if op is _c.NOT_LITERAL:
            want = self._fold(chr(av))
            return lambda ch: ch != want
        if op is _c.ANY:
            return lambda ch: ch != "\n"
        if op is _c.IN:
            return self._class(av)
        raise PatternError(f"unsupported construct {op}")

    def _class(self, items: list[tuple[Any, Any]]) -> Callable[[str], bool]:
        neg = False
        tests: list[Callable[[str], bool]] = []
        for op, av in items:
            if op is _c.NEGATE:
                neg = True
            elif op is _c.LITERAL:
                tests.append(_is(self._fold(chr(av))))
            elif op is _c.RANGE:
                tests.append(_within(chr(av[0]), chr(av[1]), self.icase))
            elif op is _c.CATEGORY and av in _CATEGORY:
                tests.append(_CATEGORY[av])
            else:
                raise PatternError(f"unsupported class item {op}")
        if neg:
            return lambda ch: not any(t(ch) for t in tests)
        return lambda ch: any(t(ch) for t in tests)

    def _emit_seq(self, items: list[tuple[Any, Any]]) -> None:
        for op, av in items:
            self._emit(op, av)

    def _emit(self, op: Any, av: Any) -> None:
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
            self._add((_CHAR, self._char_test(op, av)))
        elif op is _c.SUBPATTERN:
            _group, add, dele, sub = av
            if add or dele:
                raise PatternError("inline flags such as (?i:...) are not supported")
            self._emit_seq(list(sub))
        elif op is _c.BRANCH:
            self._emit_branch(av[1])
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            self._emit_repeat(*av)
        elif op is _c.AT:
            kinds = {_c.AT_BEGINNING: "bol", _c.AT_BEGINNING_STRING: "bol",
                     _c.AT_END: "eol", _c.AT_END_STRING: "eol",
                     _c.AT_BOUNDARY: "word", _c.AT_NON_BOUNDARY: "nonword"}
            if av not in kinds:
                raise PatternError(f"unsupported anchor {av}")
            self._add((_ASSERT, kinds[av]))
        else:
            name = str(op).lower()
            what = {"groupref": "backreferences", "assert": "look-ahead/behind",
                    "assert_not": "look-ahead/behind", "atomic_group": "atomic groups",
                    "possessive_repeat": "possessive quantifiers",
                    "groupref_exists": "conditional groups"}.get(name, name)
            raise PatternError(f"{what} are not supported")

    def _emit_branch(self, alts: list[Any]) -> None:
        jumps: list[int] = []
        for i, alt in enumerate(alts):
            if i < len(alts) - 1:
                split = self._add((_SPLIT, None, None))
                self._emit_seq(list(alt))
                jumps.append(self._add((_JMP, None)))
                self.prog[split] = (_SPLIT, split + 1, len(self.prog))
            else:
                self._emit_seq(list(alt))
        for j in jumps:
            self.prog[j] = (_JMP, len(self.prog))

    def _emit_repeat(self, lo: int, hi: int, sub: Any) -> None:
        unbounded = hi == _c.MAXREPEAT
        if lo > MAX_COUNT or (not unbounded and hi > MAX_COUNT):
            raise PatternError(f"repeat counts above {MAX_COUNT} are not supported")
        for _ in range(lo):
            self._emit_seq(list(sub))
        if unbounded:
            loop = self._add((_SPLIT, None, None))
            self._emit_seq(list(sub))
            self._add((_JMP, loop))
            self.prog[loop] = (_SPLIT, loop + 1, len(self.prog))
            return
        exits: list[int] = []
        for _ in range(hi - lo):
            exits.append(self._add((_SPLIT, None, None)))
            self._emit_seq(list(sub))
        for e in exits:
            self.prog[e] = (_SPLIT, e + 1, len(self.prog))

    # -------------------------------------------------------------- running
    def search(self, line: str) -> bool:
        """True if some part of ``line`` (its first :data:`MAX_LINE` characters) matches."""
        text = line[:MAX_LINE]
        if self.icase:
            text = text.casefold() if len(text.casefold()) == len(text) else text.lower()
        prog = self.prog
        n = len(text)
        current: list[int] = []
        for i in range(n + 1):
            seen: set[int] = set()
            nxt: list[int] = []
            # unanchored search: a new thread starts at every position
            stack = [*current, 0]
            while stack:
                pc = stack.pop()
                if pc in seen:
                    continue
                seen.add(pc)
                ins = prog[pc]
                kind = ins[0]
                if kind == _MATCH:
                    return True
                if kind == _JMP:
                    stack.append(ins[1])
                elif kind == _SPLIT:
                    stack.append(ins[2])
                    stack.append(ins[1])
                elif kind == _ASSERT:
                    if self._holds(ins[1], text, i):
                        stack.append(pc + 1)
                elif i < n and ins[1](text[i]):
                    nxt.append(pc + 1)
            current = nxt
            if i == n:
                break
        return False

    @staticmethod
    def _holds(kind: str, text: str, i: int) -> bool:
        if kind == "bol":
            return i == 0
        if kind == "eol":
            return i == len(text)
        before = i > 0 and _word(text[i - 1])
        after = i < len(text) and _word(text[i])
        return (before != after) if kind == "word" else (before == after)


def compile_pattern(pattern: str, *, ignore_case: bool = False) -> Pattern:
    """Compile ``pattern`` or raise :class:`PatternError` saying what is not supported."""
    return Pattern(pattern, ignore_case=ignore_case)


def _is(want: str) -> Callable[[str], bool]:
    """The test of a class item that is one character."""
    return lambda ch: ch == want


def _within(lo: str, hi: str, icase: bool) -> Callable[[str], bool]:
    """The test of a class item that is a range (either case of a character counts with
    ``icase``)."""
    if icase:
        return lambda ch: lo <= ch <= hi or lo <= ch.upper() <= hi or lo <= ch.lower() <= hi
    return lambda ch: lo <= ch <= hi
