"""udev rules: parsing and a three-valued evaluation against a block device.

Sources: udev(7) (rule syntax, operators, ``|`` alternatives in match patterns, GOTO/LABEL
within one file), systemd ``src/udev/udev-rules.c`` (``parse_line``, ``token_match_string``:
fnmatch per alternative, ``!=`` negates; ``ATTR{...}=`` writes the attribute while the rules
run, so the last write wins); ``systemd-udev-trigger.service`` replays ``add`` events at boot.

A match that depends on something not known here (``ENV{ID_MODEL}``, ``ATTRS{...}`` of a
parent, ``PROGRAM``) evaluates to ``None`` ("cannot be decided") instead of guessing.
"""

from __future__ import annotations

import fnmatch
from dataclasses import field
from typing import Mapping, Sequence

from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

# The value is ``[^"\\]*(?:\\.[^"\\]*)*`` ("unrolled": the same strings as
# ``(?:[^"\\]|\\.)*``, without one alternation per character, 3x faster on real rules).
_TOKEN = lazy_pattern(
    r'\s*([A-Za-z_]+)(?:\{([^}]*)\})?\s*(==|!=|\+=|-=|:=|=)\s*[a-z]?"([^"\\]*(?:\\.[^"\\]*)*)"'
    r'\s*(,|$)')
MATCH_OPS = ("==", "!=")


@record
class Token:
    """One ``KEY{attr}OP"value"`` of a rule."""

    key: str
    attr: str | None
    op: str
    value: str

    @property
    def is_match(self) -> bool:
        """True for ``==``/``!=`` (a condition), false for assignments."""
        return self.op in MATCH_OPS

    def __str__(self) -> str:
        a = f"{{{self.attr}}}" if self.attr is not None else ""
        return f'{self.key}{a}{self.op}"{self.value}"'


@record
class Rule:
    """One rule line (continuations joined)."""

    file: str
    line: int
    tokens: tuple[Token, ...]
    raw: str

    def assigns(self, key: str, attr: str | None = None) -> list[Token]:
        """Assignment tokens for ``key`` (and ``attr``)."""
        return [t for t in self.tokens if not t.is_match and t.key == key
                and (attr is None or t.attr == attr)]


def parse(text: str, file: str = "") -> tuple[list[Rule], list[str]]:
    """Rules of one file and warnings for lines udev would reject (they are skipped).

    Raises :class:`ParseError` on binary content.
    """
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=file)
    rules: list[Rule] = []
    warnings: list[str] = []
    pending = ""
    start = 0
    match = _TOKEN().match
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending:
            start = n
            if not line or line.startswith("#"):
                continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        if not full:
            continue
        tokens: list[Token] = []
        pos = 0
        ok = True
        end = len(full)
        while pos < end:
            m = match(full, pos)
            if not m or m.end() == pos:
                ok = False
                break
            key, attr, op, value, sep = m.groups()
            tokens.append(Token(key, attr, op, value.replace('\\"', '"')))
            pos = m.end()
            if sep == "" and full[pos:].strip():
                ok = False
                break
        if not ok or not tokens:
            warnings.append(f"{file}:{start}: invalid rule, udev ignores it")
            continue
        rules.append(Rule(file, start, tuple(tokens), full))
    return rules, warnings


@record
class Device:
    """What is known about a device when its ``add`` event is processed."""

    name: str
    """Kernel name (``nvme0n1``)."""
    subsystem: str = "block"
    devtype: str = "disk"
    attrs: Mapping[str, str] = field(default_factory=dict)
    """sysfs attributes known (relative path -> value); others are unknown."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Properties known (``DEVTYPE`` is filled from ``devtype``)."""
    action: str = "add"


def pattern_match(pattern: str, value: str) -> bool:
    """udev string match: ``|``-separated alternatives, each a fnmatch glob."""
    for alt in pattern.split("|"):
        if _glob_match(alt, value):
            return True
    return False


_GLOB_CHARS = frozenset("*?[")


def _glob_match(alt: str, value: str) -> bool:
    # Most udev patterns are plain words ("block", "add") or "prefix*" ("nvme*"): decide
    # those without compiling a regular expression (fnmatch compiles one per pattern, and a
    # scan meets a few hundred distinct ones); the result is fnmatchcase's.
    head = alt[:-1] if alt.endswith("*") else None
    if head is not None and _GLOB_CHARS.isdisjoint(head):
        return value.startswith(head)
    if _GLOB_CHARS.isdisjoint(alt):
        return value == alt
    return fnmatch.fnmatchcase(value, alt)


def _match(tok: Token, dev: Device) -> bool | None:
    key = tok.key
    value: str | None
    if key == "ACTION":
        value = dev.action
    elif key in ("KERNEL", "NAME"):
        value = dev.name
    elif key == "SUBSYSTEM":
        value = dev.subsystem
    elif key == "DEVTYPE" or (key == "ENV" and tok.attr == "DEVTYPE"):
        value = dev.devtype
    elif key == "ENV":
        value = dev.env.get(tok.attr or "")
    elif key == "ATTR":
        value = dev.attrs.get(tok.attr or "")
    elif key in ("KERNELS", "SUBSYSTEMS"):
        # the device itself or any parent: a match on the device decides, a miss does not
        own = dev.name if key == "KERNELS" else dev.subsystem
        return True if pattern_match(tok.value, own) == (tok.op == "==") else None
    else:
        return None  # ATTRS, DRIVERS, PROGRAM, TEST, RESULT, CONST, TAG...
    if value is None:
        return None
    hit = pattern_match(tok.value, value.rstrip())
    return hit if tok.op == "==" else not hit


def rule_matches(rule: Rule, dev: Device) -> tuple[bool | None, list[Token]]:
    """(does the rule apply: True/False/None=undecided, the tokens that left it
    undecided)."""
    undecided: list[Token] = []
    for tok in rule.tokens:
        if not tok.is_match:
            continue
        m = _match(tok, dev)
        if m is False:
            return False, []
        if m is None:
            undecided.append(tok)
    return (None, undecided) if undecided else (True, [])


@record
class AttrWrite:
    """An ``ATTR{attr}="value"`` that the rules perform (or may perform) for a device."""

    value: str
    rule: Rule
    certain: bool
    """False when a condition on the rule (or a GOTO before it) could not be decided."""
    why: str = ""
    """What left it undecided."""


class _Goto:
    """Where ``GOTO`` has left a walk through the rules: a certain ``GOTO`` skips the rules
    up to its ``LABEL``; one whose match cannot be decided makes every write up to that
    label uncertain.  Both end with their file (a ``GOTO`` never leaves it)."""

    def __init__(self) -> None:
        self.skip_to: str | None = None
        self.file = ""
        self.doubt_until: str | None = None
        self.doubt_why = ""

    def skipped(self, rule: Rule) -> bool:
        """Whether a certain ``GOTO`` skips ``rule``; passing a label ends a skip or a
        doubt."""
        label = next((t.value for t in rule.tokens if t.key == "LABEL"), None)
        if self.skip_to is not None:
            if rule.file != self.file:
                self.skip_to = None  # GOTO never leaves the file; a missing label ends it
            elif label != self.skip_to:
                return True
            else:
                self.skip_to = None
        if self.doubt_until is not None and (rule.file != self.file
                                             or label == self.doubt_until):
            self.doubt_until = None
        return False

    @property
    def certain(self) -> bool:
        """False while an undecidable ``GOTO`` may be skipping the current rule."""
        return self.doubt_until is None

    def jump(self, rule: Rule, goto: str, matched: bool, reason: str) -> None:
        """``rule`` (it matches, or may: ``matched`` false) jumps to label ``goto``."""
        self.file = rule.file
        if self.doubt_until is not None:
            return
        if matched:
            self.skip_to = goto
        else:
            self.doubt_until = goto
            self.doubt_why = f"{rule.file}:{rule.line} GOTO (cannot decide {reason})"


def attr_writes(rules: Sequence[Rule], dev: Device, attr: str) -> list[AttrWrite]:
    """Every write of ``ATTR{attr}`` for ``dev`` in rule order, following GOTO/LABEL
    within each file.  The effective value is the last certain write, unless an uncertain
    one follows it."""
    out: list[AttrWrite] = []
    walk = _Goto()
    for rule in rules:
        if walk.skipped(rule):
            continue
        writes = [t for t in rule.assigns("ATTR", attr) if t.op in ("=", ":=")]
        goto = next((t.value for t in rule.tokens if t.key == "GOTO" and not t.is_match),
                    None)
        if not writes and goto is None:
            continue  # whether it matches or not, it changes nothing here
        ok, why = rule_matches(rule, dev)
        if ok is False:
            continue
        certain = ok is True and walk.certain
        reason = ", ".join(str(t) for t in why) if why else walk.doubt_why
        for tok in writes:
            out.append(AttrWrite(tok.value, rule, certain,
                                 "" if certain else f"cannot decide {reason}"))
        if goto is not None:
            walk.jump(rule, goto, ok is True, reason)
    return out


def effective(writes: Sequence[AttrWrite]) -> tuple[AttrWrite | None, list[AttrWrite]]:
    """(last certain write, uncertain writes after it)."""
    last = None
    for w in writes:
        if w.certain:
            last = w
    after = [w for w in writes[writes.index(last) + 1:]] if last else list(writes)
    return last, [w for w in after if not w.certain]
