"""Which severity (and title) a rule has in the fleet: the ruleset's, never a report's.

A report carries a severity on every result, but a report is written by the node it
describes, and any node can write anything: when the first report read decided a rule's
severity, one report saying every rule is ``info`` turned every node's failures into info
and the gate passed a failing fleet (issue 25).  So each group of reports (aiaudit version,
ruleset name and version) is judged by a ruleset:

- the ``--ruleset`` of that name and version (a file or a shipped name; repeatable, one per
  ruleset the fleet runs), else
- the shipped (or plugin) ruleset of that name, when its version is the one the reports
  name, else
- nothing: the reports are all there is.  Then a rule's severity is the highest any report
  of the group claims (a report can raise a severity, never lower it: one hostile report
  makes the gate stricter at worst), and reports that disagree are a problem line naming
  them, with the hint to give ``--ruleset``.

Against a ruleset, a report that claims another severity, or results of rules the ruleset
does not have, is a problem line (exit 5 when the fleet would otherwise pass); its results
count with the ruleset's severity, and results of unknown rules are not counted (a report
cannot add rules to the fleet).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from aiaudit.core.errors import AuditError
from aiaudit.core.startup.records import record
from aiaudit.fleet import bounds
from aiaudit.fleet.extract import SEVERITIES, Group, Item

MAX_NAMED = 5
"""Rules (or reports) named as examples in one problem line."""


@record
class Authority:
    """What judges one group: a ruleset's rules, or (``rules`` is ``None``) the reports."""

    label: str
    """``ruleset dl-training 1.0 (shipped)``, ``--ruleset ./site.yaml``, or ``the reports'
    own severities``."""
    rules: Mapping[str, tuple[str, str]] | None
    """Rule id -> (severity, title)."""

    def check(self, items: Iterable[Item], origin: str) -> tuple[list[Item], str | None]:
        """The items this ruleset knows, and a problem line for a report that claims other
        severities or unknown rules (``None`` when it agrees)."""
        rules = self.rules
        assert rules is not None
        kept: list[Item] = []
        differ: dict[str, tuple[str, str]] = {}
        unknown: dict[str, None] = {}
        for item in items:
            known = rules.get(item[0])
            if known is None:
                unknown[item[0]] = None
                continue
            if item[3] != known[0]:
                differ.setdefault(item[0], (item[3], known[0]))
            kept.append(item)
        if not differ and not unknown:
            return kept, None
        parts = []
        if differ:
            shown = ", ".join(f"{r}: {claimed}, the ruleset says {says}"
                              for r, (claimed, says) in list(differ.items())[:MAX_NAMED])
            more = f", and {len(differ) - MAX_NAMED} more" if len(differ) > MAX_NAMED else ""
            parts.append(f"claims another severity for {len(differ)} rule(s) ({shown}{more}): "
                         f"the ruleset's counts")
        if unknown:
            names = ", ".join(list(unknown)[:MAX_NAMED])
            more = f", and {len(unknown) - MAX_NAMED} more" if len(unknown) > MAX_NAMED else ""
            parts.append(f"has results of {len(unknown)} rule(s) the ruleset does not have "
                         f"({names}{more}): not counted")
        return kept, f"{origin}: judged by {self.label}: the report " + "; it ".join(parts)


REPORTS = "the reports' own severities"


@record(frozen=False)
class _Claim:
    count: int
    named: list[str]


class Claims:
    """What the reports of one group without a ruleset claim: per rule, each severity with
    how many reports claim it and the first few of them."""

    def __init__(self) -> None:
        self._by_rule: dict[str, dict[str, _Claim]] = {}
        self._titles: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._by_rule)

    def room(self, items: Iterable[Item]) -> bool:
        """Whether the rules of these items fit in the table (:data:`bounds.MAX_RULES`)."""
        new = {i[0] for i in items if i[0] not in self._by_rule}
        return len(self._by_rule) + len(new) <= bounds.MAX_RULES

    def add(self, items: Iterable[Item], origin: str) -> None:
        """Count one report's claims (each rule once per report)."""
        seen: set[str] = set()
        for rule, _subject, _status, severity, title, _actual in items:
            if rule in seen:
                continue
            seen.add(rule)
            self._titles.setdefault(rule, title)
            claim = self._by_rule.setdefault(rule, {}).setdefault(severity, _Claim(0, []))
            claim.count += 1
            if len(claim.named) < MAX_NAMED:
                claim.named.append(origin)

    def rule(self, rule: str) -> tuple[str, str]:
        """(severity, title) of a rule: the highest severity claimed."""
        claimed = self._by_rule.get(rule, {})
        severity = max(claimed, key=SEVERITIES.index) if claimed else "info"
        return severity, self._titles.get(rule, "")

    def problem(self, label: str) -> str | None:
        """One line when the reports disagree on a severity, naming reports that claimed
        less than the highest; ``None`` when they agree."""
        split = {r: c for r, c in self._by_rule.items() if len(c) > 1}
        if not split:
            return None
        low: dict[str, None] = {}
        examples: list[str] = []
        for rule, claimed in split.items():
            top = max(claimed, key=SEVERITIES.index)
            for severity, claim in claimed.items():
                if severity != top:
                    low.update(dict.fromkeys(claim.named))
            if len(examples) < 3:
                examples.append(f"{rule}: " + ", ".join(f"{s} in {c.count}"
                                                        for s, c in claimed.items()))
        names = ", ".join(list(low)[:MAX_NAMED])
        return (f"{label}: the reports disagree on the severity of {len(split)} rule(s) "
                f"({'; '.join(examples)}): judged by the highest claimed; reports that "
                f"claim less: {names}{', ...' if len(low) > MAX_NAMED else ''} (give "
                f"--ruleset to judge them by the ruleset)")


class Judges:
    """The authority of each group: ``--ruleset`` files and names, else the shipped ruleset
    of the group's name and version, else the reports."""

    def __init__(self, refs: Iterable[str] = (), *, shipped: bool = True) -> None:
        """Load every ``--ruleset`` now (a ruleset that does not load is the user's error:
        :class:`~aiaudit.core.errors.UsageError` or ``RulesetError``, exit 2).  ``shipped``:
        judge by the shipped rulesets where no ``--ruleset`` matches (tests turn it off)."""
        self._given: dict[tuple[str, str], Authority] = {}
        self._shipped = shipped
        self.used: set[tuple[str, str]] = set()
        self.problems: list[str] = []
        for ref in refs:
            name, version, rules = _load(ref)
            self._given[(name, version)] = Authority(f"--ruleset {ref} ({name} {version})",
                                                     rules)

    def authority(self, group: Group) -> Authority:
        """What judges ``group``."""
        key = (group.ruleset, group.ruleset_version)
        given = self._given.get(key)
        if given is not None:
            self.used.add(key)
            return given
        if self._shipped:
            found = self._shipped_rules(group.ruleset)
            if found is not None and found[0] == group.ruleset_version:
                return Authority(f"ruleset {group.ruleset} {found[0]} (shipped)", found[1])
        return Authority(REPORTS, None)

    def unused(self) -> list[str]:
        """``--ruleset`` arguments that matched no group (a notice each)."""
        return [a.label for k, a in self._given.items() if k not in self.used]

    def _shipped_rules(self, name: str) -> tuple[str, Mapping[str, tuple[str, str]]] | None:
        if name not in _SHIPPED:
            from aiaudit.core import plugins

            _SHIPPED[name] = None
            if name in plugins.registry().rulesets:
                try:
                    _, version, rules = _load(name)
                except AuditError as exc:
                    _SHIPPED[name] = f"{exc}"
                else:
                    _SHIPPED[name] = (version, rules)
        found = _SHIPPED[name]
        if isinstance(found, str):
            self.problems.append(f"ruleset {name}: cannot be loaded to judge its reports "
                                 f"({found}): the reports' own severities count")
            _SHIPPED[name] = None
            return None
        return found


_SHIPPED: dict[str, tuple[str, Mapping[str, tuple[str, str]]] | str | None] = {}
"""Shipped (and plugin) rulesets loaded so far in this process, by name (``None``: no such
ruleset; a string: why it did not load).  They cannot change while aiaudit runs."""


def _load(ref: str) -> tuple[str, str, dict[str, tuple[str, str]]]:
    """Name, version and rules (id -> severity, title) of ruleset ``ref``, as ``aiaudit
    scan --ruleset REF`` loads it (``extends`` and ``overrides`` applied)."""
    from aiaudit.core import plugins, ruleset

    rs = ruleset.load(ref, plugins.registry())
    rules = {r.id: (r.info.severity.value, r.info.title) for r in rs.rules}
    return rs.name, rs.version, rules
