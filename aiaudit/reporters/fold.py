"""Results that say the same thing, said once (the human reports: text and HTML).

Three foldings, none of which drops a fact the JSON report and ``-v`` keep:

- :func:`entries`: the results of one rule that differ only in the words of their subject
  (``ipv4 (boot)`` / ``ipv6 (boot)``: "no IPv4 input filter" / "no IPv6 input filter") are
  one entry, ``ipv4/ipv6 (boot): no IPv4/IPv6 input filter``;
- :func:`facts`: of "expected X, actual Y; evidence: ...", only what the message above does
  not already say: an expected or actual value, or a piece of evidence, all of whose words
  the message contains is left out;
- the evidence that only says where a check looked and found nothing (``unit X in`` eight
  directories ``= not installed``) is named by what was missing; the places searched are
  in ``-v`` and JSON; a piece of evidence already printed for an earlier result is named
  by that result ("as for RULE above"), not printed again.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import field
from typing import Iterable, Sequence

from aiaudit.core.model import Evidence, Finding, Result
from aiaudit.core.startup.records import record
from aiaudit.reporters._common import evidence_text, plain_expected

NOTHING_FOUND = ("not installed", "none installed")
"""Values of ``default`` evidence that record a search that found nothing."""

_STOP = frozenset({"a", "an", "the", "of", "for", "in", "at", "on", "is", "=", "and", "or",
                   "to", "by"})
_SPLIT = re.compile(r"[\s,;()\[\]{}'\"`]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]+")


@record
class Entry:
    """One or more results of one rule that say the same thing about different subjects."""

    findings: tuple[Finding, ...]
    """The results, in report order (the first stands for all)."""
    subject: str
    """The subjects, folded: ``ipv4/ipv6 (boot)``, or listed with commas."""
    message: str
    """The message, with the words that name the subject folded the same way."""


@record(frozen=False)
class Facts:
    """What the "expected, actual; evidence" line of an entry says, once."""

    expected: str | None = None
    """The expected value, unless the message says it."""
    actual: str | None = None
    """The actual value, unless the message says it."""
    evidence: list[str] = field(default_factory=list)
    """Evidence not said by the message nor printed before, as text."""
    missing: list[str] = field(default_factory=list)
    """What searches found absent (``ufw``, ``unit irqbalance.service``)."""
    same_as: list[str] = field(default_factory=list)
    """Where the rest of the evidence was printed first (``RULE subject``)."""


def _parts(text: str, subject: str) -> list[str]:
    """``text`` split at the words of ``subject`` (odd items are those words): where a
    word, in any case, stands alone (no letter, digit or ``_`` either side), the longest
    first.  ASCII text is split by :func:`_split_ascii`; other text by the regular
    expression saying the same (Unicode case folding: ``K`` matches the Kelvin sign)."""
    words = sorted({w for w in _WORD.findall(subject)}, key=len, reverse=True)
    if not words:
        return [text]
    if text.isascii():
        return _split_ascii(text, words)
    pat = r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, words)) + r")(?![A-Za-z0-9_])"
    return re.split(pat, text, flags=re.IGNORECASE)


_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _split_ascii(text: str, words: list[str]) -> list[str]:
    """:func:`_parts` of ASCII ``text`` without compiling a pattern per subject (four
    compilations cost a report 2 M instructions); a property test holds it to the
    pattern."""
    low = text.lower()
    lows = [w.lower() for w in words]
    out: list[str] = []
    last = i = 0
    n = len(text)
    while i < n:
        if i == 0 or text[i - 1] not in _WORD_CHARS:
            for w in lows:
                j = i + len(w)
                if low.startswith(w, i) and (j == n or text[j] not in _WORD_CHARS):
                    out += (text[last:i], text[i:j])
                    last = i = j
                    break
            else:
                i += 1
            continue
        i += 1
    out.append(text[last:])
    return out


def _merge(parts: Sequence[list[str]]) -> str:
    """One text from texts of one shape: the differing words joined with ``/``."""
    out = []
    for i, literal in enumerate(parts[0]):
        out.append(literal if i % 2 == 0 else
                   "/".join(dict.fromkeys(p[i] for p in parts)))
    return "".join(out)


def _key(f: Finding) -> tuple[object, ...]:
    """What two results that fold into one entry have in common, but the message."""
    r = f.result
    waiver = (f.waiver.reason, f.waiver.owner) if f.waiver else None
    change = r.data.get("change") if r.data else None
    return (f.rule_id, r.status, r.aspect, r.expected, r.actual, waiver, repr(change),
            tuple(evidence_text(e) for e in r.evidence))


def _shape(f: Finding) -> tuple[str, ...]:
    """The message without the words of the subject (a pattern made for the subject: asked
    only of results whose :func:`_key` another result shares)."""
    r = f.result
    return tuple(p.lower() for p in _parts(r.message, r.subject)[0::2])


def entries(findings: Iterable[Finding]) -> list[Entry]:
    """``findings`` (of one rule) folded: results equal but for the words of their subject
    are one entry, at the place of the first."""
    keyed = [(_key(f), f) for f in findings]
    shared = Counter(k for k, _f in keyed)
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for k, f in keyed:
        groups.setdefault((*k, _shape(f)) if shared[k] > 1 else k, []).append(f)
    out = []
    for members in groups.values():
        first = members[0].result
        if len(members) == 1:
            out.append(Entry((members[0],), first.subject, first.message))
            continue
        subj = [_parts(f.result.subject, f.result.subject) for f in members]
        same_shape = all(s[0::2] == subj[0][0::2] for s in subj)
        subject = (_merge(subj) if same_shape
                   else ", ".join(dict.fromkeys(f.result.subject for f in members)))
        msgs = [_parts(f.result.message, f.result.subject) for f in members]
        message = _merge(msgs) if all(len(m) == len(msgs[0]) for m in msgs) else first.message
        out.append(Entry(tuple(members), subject, message))
    return out


def _tokens(text: str) -> set[str]:
    out = set()
    for t in _SPLIT.split(text.lower()):
        t = t.strip(":.").lstrip("/")
        if t.startswith("proc/sys/"):  # sysctl(8): the key is the path with dots
            t = t[len("proc/sys/"):].replace("/", ".")
        if t and t not in _STOP:
            out.add(t)
    return out


_ASIDE = re.compile(r" \((?:[^()\s]+ ?){1,2}\)")
"""A short aside in parentheses (``(OpenSSH)``), which adds nothing to what decided."""


def said(text: str, message: str) -> bool:
    """True when every word of ``text`` is in ``message`` (paths without their leading
    ``/``, small words and short asides aside): printing ``text`` under ``message`` would
    repeat it."""
    return _tokens(_ASIDE.sub("", text)) <= _tokens(message)


def searched(e: Evidence) -> str | None:
    """What a search found absent (``ufw``, ``unit irqbalance.service``), when ``e`` only
    records where a check looked and found nothing; else ``None``."""
    if e.kind != "default" or (e.value or "").strip() not in NOTHING_FOUND:
        return None
    head, sep, _rest = e.source.partition(": ")
    if sep:
        return head
    return e.source.partition(" in ")[0]


_SENTENCE = re.compile(r"(?<=\.)\s+(?=\S)")
NOTE_MIN = 40
"""Shortest sentence :func:`said_before` replaces (a short one costs less than the
reference)."""


def said_before(message: str, seen: dict[str, str], where: str) -> str:
    """``message`` without the sentences after its first that an earlier message of the
    report printed (a pam_limits note appended to each limits result): each becomes a
    reference to where it was printed; the others are remembered as printed at ``where``."""
    parts = _SENTENCE.split(message)
    out = parts[:1]
    refs: list[str] = []
    for sentence in parts[1:]:
        key = "sentence: " + sentence
        if len(sentence) >= NOTE_MIN and key in seen:
            if seen[key] not in refs:
                refs.append(seen[key])
            continue
        seen.setdefault(key, where)
        out.append(sentence)
    text = " ".join(out)
    return text + (f" (The rest as for {' and '.join(refs)} above.)" if refs else "")


def facts(r: Result, message: str, seen: dict[str, str], where: str) -> Facts:
    """The facts of a result worth printing under ``message``; ``seen`` maps evidence
    already printed to where (updated with what this prints, as ``where``)."""
    out = Facts()
    expected = plain_expected(r.expected)
    if expected is not None and not said(expected, message):
        out.expected = expected
    if r.actual is not None and not said(r.actual, message):
        out.actual = r.actual
    for e in r.evidence:
        missing = searched(e)
        if missing is not None:
            out.missing.append(missing)
            continue
        # "KEY: no line in DIRS = CONCLUSION": the conclusion decided, the places
        # searched go to -v and JSON
        text = (e.value or "") if ": no line in " in e.source else evidence_text(e)
        if said(text, message):
            continue
        if text in seen:
            if seen[text] not in out.same_as:
                out.same_as.append(seen[text])
            continue
        seen[text] = where
        out.evidence.append(text)
    key = "absent: " + ", ".join(out.missing)
    if out.missing and key in seen:
        if seen[key] not in out.same_as:
            out.same_as.append(seen[key])
        out.missing = []
    elif out.missing:
        seen[key] = where
    return out
