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

Work a pattern's answer cannot depend on is skipped at C speed: a literal every match holds
(:attr:`Pattern.required`) is looked for with ``str.find`` first, and where no thread is
alive the VM jumps to the next character a match can start with (:attr:`Pattern.first`, one
``re`` character class: linear, nothing to backtrack).  What is left is charged to a
:class:`Budget` per rule and file, whose end is :class:`TooCostly` (undecided, never "no
match").
"""

from __future__ import annotations

import importlib
import re
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

_CHAR, _SPLIT, _JMP, _ASSERT, _MATCH = range(5)


class PatternError(ValueError):
    """The pattern is not valid or not supported by this matcher."""


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_FIRST_CATEGORY = {"digit": r"\d", "space": r"\s", "word": r"\w"}
r"""For the first-character class: the ``re`` class item of each category, which accepts
exactly what its test below accepts (CPython's sre: ``\d`` is ``str.isdecimal``, ``\s``
``str.isspace``, ``\w`` ``str.isalnum`` or ``_``)."""

_CATEGORY: dict[Any, Callable[[str], bool]] = {
    # str.isdecimal, as re's \d (a superscript two is isdigit, not a \d)
    _c.CATEGORY_DIGIT: str.isdecimal,
    _c.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdecimal(),
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
        self.anchored = self.prog[0][:2] == (_ASSERT, "bol")
        """The pattern starts with ``^``: no match can start past the first character."""
        self.first = self._first_class()
        """Python's ``re`` class of every character a match can start with (a superset),
        or ``None``: where no thread is alive the VM moves to the next such character at
        C speed (one class: linear, nothing to backtrack), not character by character."""
        self.required = self._required(list(parsed))
        """A literal every match contains (as compared: case-folded with
        ``ignore_case``), looked for with ``str.find`` before the VM runs; ``None``."""

    def _required(self, items: list[tuple[Any, Any]]) -> str | None:
        """The longest run of literal characters in the pattern's top-level sequence
        (groups without a repeat count as part of it); ``None`` when there is none."""
        runs: list[str] = []
        run: list[str] = []

        def flatten(seq: list[tuple[Any, Any]]) -> None:
            for op, av in seq:
                if op is _c.LITERAL:
                    run.append(self._fold(chr(av)))
                elif op is _c.SUBPATTERN and not av[1] and not av[2]:
                    flatten(list(av[3]))
                else:
                    runs.append("".join(run))
                    run.clear()

        flatten(items)
        runs.append("".join(run))
        # (a character that folds into several never matches one character: the VM then
        # finds nothing, whatever the prefilter says)
        return max(runs, key=len) or None

    # -------------------------------------------------------------- compiling
    def _add(self, ins: tuple[Any, ...]) -> int:
        if len(self.prog) >= MAX_PROGRAM:
            raise PatternError(f"pattern too complex (more than {MAX_PROGRAM} steps)")
        self.prog.append(ins)
        return len(self.prog) - 1

    def _first_class(self) -> re.Pattern[str] | None:
        """:attr:`first`: the class items of the character instructions reached from the
        start without reading a character; ``None`` where one is an assertion or the
        match (a match may start anywhere) or has no useful class (``.``, ``[^x]``)."""
        frags: list[str] = []
        seen: set[int] = set()
        stack = [0]
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            ins = self.prog[pc]
            if ins[0] == _JMP:
                stack.append(ins[1])
            elif ins[0] == _SPLIT:
                stack += [ins[1], ins[2]]
            elif ins[0] != _CHAR:
                return None
            else:
                frag = self._class_items(*ins[2])
                if frag is None:
                    return None
                frags.append(frag)
        return re.compile(f"[{''.join(frags)}]")

    def _class_items(self, op: Any, av: Any) -> str | None:
        """``re`` class items holding every character the test of ``(op, av)`` accepts,
        compared as the VM compares (case-folded with ``ignore_case``); ``None``."""
        def char(code: int) -> str | None:
            ch = self._fold(chr(code))
            return f"\\U{ord(ch):08x}" if len(ch) == 1 else None

        if op is _c.LITERAL:
            return char(av)
        if op is not _c.IN:
            return None
        items: list[str] = []
        for iop, iav in av:
            name = str(iav).lower().removeprefix("category_")
            if iop is _c.LITERAL and char(iav) is not None:
                items.append(str(char(iav)))
            elif iop is _c.RANGE and not self.icase:
                items.append(f"\\U{iav[0]:08x}-\\U{iav[1]:08x}")
            elif iop is _c.CATEGORY and name in _FIRST_CATEGORY:
                items.append(_FIRST_CATEGORY[name])
            else:  # a negation, a range folded, a negated category
                return None
        return "".join(items)

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
            self._add((_CHAR, self._char_test(op, av), (op, av)))
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
    def _text(self, line: str) -> str:
        """``line`` as the program compares it: case-folded with ``ignore_case`` (lower
        case where folding would change its length)."""
        if not self.icase:
            return line
        folded = line.casefold()
        return folded if len(folded) == len(line) else line.lower()

    def required_at(self, line: str) -> int:
        """Where the required literal first occurs in ``line`` (as compared: the position
        can be off where case folding changes a character's length); -1 when it does not,
        or the pattern has none."""
        return self._text(line).find(self.required) if self.required else -1

    def search(self, line: str, budget: Budget | None = None) -> bool:
        """True if some part of ``line`` (all of it: no character is left unsearched)
        matches.  ``budget`` bounds the work (:class:`Budget`; :class:`TooCostly` when it
        runs out), else :data:`MAX_STEPS` for this line."""
        text = self._text(line)
        if self.required is not None and self.required not in text:
            if budget is not None:
                budget.spend(1)
            return False
        if budget is None:
            budget = Budget()
        return self._run(text, budget)

    def _run(self, text: str, budget: Budget) -> bool:
        """The Pike VM over ``text``, its thread steps charged to ``budget``."""
        found, steps = self._vm(text, budget.left)
        budget.spend(steps)  # TooCostly when the VM stopped at the limit
        return found

    def _vm(self, text: str, limit: int) -> tuple[bool, int]:
        """Whether some part of ``text`` matches, and the thread steps spent; the VM stops
        (``False``) once the steps pass ``limit``.

        Not split: the hot loop of the matcher (locals only, no helper call per step)."""
        prog, first = self.prog, self.first
        n = len(text)
        current: list[int] = []
        steps = 1
        i = 0
        while i <= n:
            if first is not None and not current:
                # no thread alive: only a new one at a first character can go on
                hit = first.search(text, i)
                if hit is None:
                    return False, steps
                i = hit.start()
                steps += 1
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
                    return True, steps + len(seen)
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
            steps += len(seen)
            if steps > limit:
                return False, steps
            current = nxt
            if not current and self.anchored:
                break  # a leading ^ held only at the start, and no thread is left
            i += 1
        return False, steps

    def first_line(self, text: str, budget: Budget) -> tuple[int, str] | None:
        """``(line number, line)`` of the first line of ``text`` that matches, or
        ``None``.  A line ends at a line feed (as the programs reading configuration files
        decide: sudo, sshd, systemd), a carriage return before it is not part of the line;
        other separators (form feed, ``\\x0b``, U+2028 ...) are characters of a line like
        any other.  Every character is searched; the work is charged to ``budget``
        (:class:`TooCostly` when it runs out: the caller cannot decide, never "no
        match")."""
        req = self.required
        folded = text.casefold() if self.icase else text
        # positions in the folded text are those of the text only when no character
        # folds into several (then every line folds as the VM compares it, too)
        if len(folded) != len(text):
            return self._every_line(text, budget)
        if req is not None:
            return self._candidates(text, lambda at: folded.find(req, at), budget)
        first = self.first
        if first is not None:
            def find(at: int) -> int:
                hit = first.search(folded, at)
                return -1 if hit is None else hit.start()
            return self._candidates(text, find, budget)
        return self._every_line(text, budget)

    def _candidates(self, text: str, find: Callable[[int], int], budget: Budget
                    ) -> tuple[int, str] | None:
        """:meth:`first_line` through what every match holds: only the lines that hold
        it are run (``find(position)``: the next place, over the whole text at C speed,
        of the required literal or of a character a match can start with; then the VM on
        that line)."""
        lineno, counted, start = 1, 0, 0
        while True:
            pos = find(start)
            if pos < 0:
                return None
            begin = text.rfind("\n", 0, pos) + 1
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            line = _strip_cr(text[begin:end])
            budget.spend(1)
            if self._run(self._text(line), budget):
                lineno += text.count("\n", counted, begin)
                return lineno, line
            start = end + 1

    def _every_line(self, text: str, budget: Budget) -> tuple[int, str] | None:
        """:meth:`first_line` line by line (no required literal to look for first)."""
        begin, lineno, size = 0, 1, len(text)
        while begin <= size:
            end = text.find("\n", begin)
            end = size if end < 0 else end
            if end == size and begin == size and lineno > 1:
                return None  # the text ends with a line feed: no line after it
            line = _strip_cr(text[begin:end])
            if self.search(line, budget):
                return lineno, line
            budget.spend(1)
            begin, lineno = end + 1, lineno + 1
        return None

    @staticmethod
    def _holds(kind: str, text: str, i: int) -> bool:
        if kind == "bol":
            return i == 0
        if kind == "eol":
            return i == len(text)
        before = i > 0 and _word(text[i - 1])
        after = i < len(text) and _word(text[i])
        return (before != after) if kind == "word" else (before == after)


def _strip_cr(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


MAX_STEPS = 2_000_000
"""Thread steps of the VM one :class:`Budget` allows by default (a rule's patterns over one
file): 0.7-1.8 s of CPU (0.35-0.9 µs a step, measured: a character class costs more than a
literal).  Far more than honest patterns need (``NOPASSWD`` on a 4 MB file: no step at all,
the required literal is looked for first; ``^\\s*$`` over 100,000 lines: about 5 steps a
line, the VM stops once ``^`` cannot hold), and the bound on the hostile ones (a program
of 3,000 instructions spends up to 3,000 steps on every character: 0.1-1.4 ms)."""


class TooCostly(Exception):
    """The matching work ran past its :class:`Budget`: nothing is decided."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit:,} matching steps")
        self.limit = limit


class Budget:
    """The work the patterns of one rule may do on one file, in VM thread steps (each step
    is one instruction of one thread at one character)."""

    def __init__(self, steps: int = MAX_STEPS) -> None:
        self.limit = steps
        self.left = steps

    def spend(self, steps: int) -> None:
        """Charge ``steps``; :class:`TooCostly` once more than the limit is spent."""
        self.left -= steps
        if self.left < 0:
            raise TooCostly(self.limit)


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
