"""Fold reduced node reports into a :class:`~aiaudit.fleet.model.Fleet`.

:class:`Aggregator` keeps per node only integers: each result becomes three (an index into
the table of ``(group, rule, subject)`` keys, a status code and an index into the table of
distinct values), so 10,000 nodes of the ``dl-training`` ruleset hold a few megabytes.  A
node reported twice (same host name and machine id) counts once: its newest report (by
``started``) is used and the other is a notice.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from typing import Iterable

from aiaudit.core.startup.records import record
from aiaudit.fleet import drift, identity
from aiaudit.fleet.extract import STATUSES, Group, NodeReport
from aiaudit.fleet.model import Column, Fleet, GroupView, RuleRow

WORST_FIRST: tuple[str, ...] = ("fail", "error", "waived", "pass", "skip")
"""How a node's results for one rule make its status for the rule: the worst wins."""
_RANK = {s: i for i, s in enumerate(WORST_FIRST)}
_STATUS_CODE = {s: i for i, s in enumerate(STATUSES)}


@record(frozen=False)
class _Node:
    hostname: str
    machine_id: str | None
    group: int
    started: str
    origin: str
    facts: tuple[tuple[str, str], ...]
    data: array[int]
    """Triples: key index, status code, value index (-1: no value)."""


class Aggregator:
    """Takes :class:`NodeReport` objects one at a time; :meth:`finish` builds the fleet."""

    def __init__(self) -> None:
        self._groups: dict[Group, int] = {}
        self._keys: dict[tuple[int, str, str], int] = {}
        self._rules: dict[tuple[int, str], tuple[str, str]] = {}
        """(group, rule) -> (severity, title), as first reported."""
        self._rule_order: dict[int, list[str]] = defaultdict(list)
        self._values: dict[str, int] = {}
        self._nodes: dict[tuple[str, str | None], _Node] = {}
        self.notices: list[str] = []
        self.reports = 0

    def add(self, rep: NodeReport) -> None:
        """Aggregate one node (the report itself is not kept)."""
        self.reports += 1
        g = self._groups.setdefault(rep.group, len(self._groups))
        key = (rep.hostname, rep.machine_id)
        old = self._nodes.get(key)
        if old is not None:
            if old.started > rep.started:
                self.notices.append(f"{rep.hostname}: reported again in {rep.origin} (older "
                                    f"than {old.origin}, which is used)")
                return
            self.notices.append(f"{rep.hostname}: reported again in {rep.origin} (newer "
                                f"than {old.origin}, which is replaced)")
        keys, values, rules = self._keys, self._values, self._rules
        data = array("i")
        for rule_id, subject, status, severity, title, actual in rep.items:
            k = keys.get((g, rule_id, subject))
            if k is None:
                k = keys[(g, rule_id, subject)] = len(keys)
                if (g, rule_id) not in rules:
                    rules[(g, rule_id)] = (severity, title)
                    self._rule_order[g].append(rule_id)
            v = -1
            if actual is not None:
                v = values.get(actual, -1)
                if v < 0:
                    v = values[actual] = len(values)
            data.extend((k, _STATUS_CODE[status], v))
        self._nodes[key] = _Node(rep.hostname, rep.machine_id, g, rep.started, rep.origin,
                                 rep.facts, data)

    def finish(self, problems: Iterable[str] = ()) -> Fleet:
        """The fleet of every node added so far."""
        groups = sorted(self._groups, key=self._groups.__getitem__)
        key_info = sorted(self._keys, key=self._keys.__getitem__)
        values = sorted(self._values, key=self._values.__getitem__)
        views = []
        drifts = []
        facts = []
        for gi, group in enumerate(groups):
            nodes = sorted((n for n in self._nodes.values() if n.group == gi),
                           key=lambda n: (n.hostname, n.machine_id or ""))
            if not nodes:
                continue
            views.append(self._view(gi, group, nodes, key_info))
            drifts.extend(drift.value_drift(group.label, nodes, key_info, values))
            facts.extend(drift.fact_drift(group.label, [(n.hostname, n.facts) for n in nodes]))
        return Fleet(groups=tuple(views), drift=tuple(drifts), facts=tuple(facts),
                     identity=identity.findings((n.hostname, n.machine_id)
                                                for n in self._nodes.values()),
                     problems=tuple(problems), notices=tuple(self.notices),
                     reports=self.reports)

    def _view(self, gi: int, group: Group, nodes: list[_Node],
              key_info: list[tuple[int, str, str]]) -> GroupView:
        rule_ids = self._rule_order[gi]
        pos = {r: i for i, r in enumerate(rule_ids)}
        key_rule = {k: pos[rule] for k, (g, rule, _) in enumerate(key_info) if g == gi}
        nrules = len(rule_ids)
        by_status: list[dict[str, list[str]]] = [defaultdict(list) for _ in rule_ids]
        columns: dict[tuple[str, ...], list[str]] = {}
        for n in nodes:
            worst = [""] * nrules
            d = n.data
            for i in range(0, len(d), 3):
                r = key_rule[d[i]]
                s = STATUSES[d[i + 1]]
                if not worst[r] or _RANK[s] < _RANK[worst[r]]:
                    worst[r] = s
            for r, s in enumerate(worst):
                if s:
                    by_status[r][s].append(n.hostname)
            columns.setdefault(tuple(worst), []).append(n.hostname)
        rows = []
        for r, rule in enumerate(rule_ids):
            severity, title = self._rules[(gi, rule)]
            st = by_status[r]
            rows.append(RuleRow(rule, severity, title,
                                tuple((s, len(st.get(s, ()))) for s in STATUSES),
                                tuple(st.get("fail", ())), tuple(st.get("error", ()))))
        cols = sorted(columns.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
        return GroupView(group, tuple(n.hostname for n in nodes), tuple(rows),
                         tuple(Column(tuple(h), s) for s, h in cols))


def aggregate(reports: Iterable[NodeReport], problems: Iterable[str] = ()) -> Fleet:
    """The fleet of ``reports`` (a convenience for tests and the API)."""
    agg = Aggregator()
    for rep in reports:
        agg.add(rep)
    return agg.finish(problems)
