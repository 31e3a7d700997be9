"""Fold reduced node reports into a :class:`~aiaudit.fleet.model.Fleet`.

:class:`Aggregator` keeps per report only integers: each result becomes three (an index into
the table of ``(group, rule, subject)`` keys, a status code and an index into the table of
distinct values), so 10,000 reports of the ``dl-training`` ruleset hold a few megabytes.
Severities come from the ruleset each group is judged by (:mod:`aiaudit.fleet.authority`),
never from a report.  Which reports are one node is decided when all are read
(:mod:`aiaudit.fleet.identity`): a report never replaces another; several different reports
of one node are a conflict, listed, and the node's status for a rule is the worst over all
of them (a report replayed under a failing node's identity cannot make it pass).  A report
read twice (the same scan: same identity, run, start time and results) counts once.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from typing import Iterable, Sequence

from aiaudit.core.startup.records import record
from aiaudit.fleet import bounds, drift, identity
from aiaudit.fleet.authority import Authority, Claims, Judges
from aiaudit.fleet.extract import STATUSES, Group, NodeReport
from aiaudit.fleet.model import (
    Column,
    Conflict,
    Fleet,
    GroupView,
    Node,
    ReportRef,
    RuleRow,
)

WORST_FIRST: tuple[str, ...] = ("fail", "error", "waived", "pass", "skip")
"""How a node's results for one rule make its status for the rule: the worst wins."""
_RANK = {s: i for i, s in enumerate(WORST_FIRST)}
_STATUS_CODE = {s: i for i, s in enumerate(STATUSES)}


@record(frozen=False)
class _Report:
    hostname: str
    machine_id: str | None
    product_uuid: str | None
    group: int
    started: str
    started_at: float
    origin: str
    run_id: str
    facts: tuple[tuple[str, str], ...]
    data: array[int]
    """Triples: key index, status code, value index (-1: no value)."""


class Aggregator:
    """Takes :class:`NodeReport` objects one at a time; :meth:`finish` builds the fleet."""

    def __init__(self, judges: Judges | None = None) -> None:
        self._judges = judges if judges is not None else Judges()
        self._groups: dict[Group, int] = {}
        self._authority: list[Authority] = []
        self._claims: list[Claims] = []
        self._keys: dict[tuple[int, str, str], int] = {}
        self._rule_order: dict[int, dict[str, None]] = defaultdict(dict)
        self._values: dict[str, int] = {}
        self._reports: list[_Report] = []
        self._seen: dict[tuple[object, ...], int] = {}
        self._fact_sets: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}
        """One object per distinct set of host and class facts: the nodes of a class share
        theirs (about 25 facts, 1.5 KB a node otherwise), at most one per report."""
        self._overflow: set[str] = set()
        self.problems: list[str] = []
        self.problems_not_kept = 0
        self.notices: list[str] = []
        self.reports = 0

    @property
    def full(self) -> bool:
        """Whether :data:`~aiaudit.fleet.bounds.MAX_REPORTS` reports were taken."""
        return self.reports >= bounds.MAX_REPORTS

    def problem(self, line: str) -> None:
        """Keep one problem line (the first :data:`~bounds.MAX_PROBLEMS`; the rest are
        counted)."""
        if len(self.problems) < bounds.MAX_PROBLEMS:
            self.problems.append(line)
        else:
            self.problems_not_kept += 1

    def _notice(self, line: str) -> None:
        if len(self.notices) < bounds.MAX_PROBLEMS:
            self.notices.append(line)

    def _group(self, rep: NodeReport) -> int | None:
        g = self._groups.get(rep.group)
        if g is not None:
            return g
        if len(self._groups) >= bounds.MAX_GROUPS:
            self.problem(f"{rep.origin}: a report of {rep.group.label}: more than "
                         f"{bounds.MAX_GROUPS} groups (aiaudit version and ruleset) in one "
                         f"fleet: refused")
            return None
        g = self._groups[rep.group] = len(self._groups)
        self._authority.append(self._judges.authority(rep.group))
        self._claims.append(Claims())
        return g

    def add(self, rep: NodeReport) -> None:
        """Aggregate one node's report (the report itself is not kept)."""
        g = self._group(rep)
        if g is None:
            return
        auth = self._authority[g]
        items: Sequence[tuple[str, str, str, str, str, str | None]] = rep.items
        if auth.rules is not None:
            items, problem = auth.check(items, rep.origin)
            if problem is not None:
                self.problem(problem)
        elif not self._claims[g].room(items):
            self.problem(f"{rep.origin}: its rules would make more than {bounds.MAX_RULES} "
                         f"in {rep.group.label}, which no ruleset judges: refused")
            return
        else:
            self._claims[g].add(items, rep.origin)
        self.reports += 1
        data = self._encode(g, items, rep.origin)
        seen = (rep.hostname, rep.machine_id, rep.product_uuid, rep.run_id, rep.started, g)
        twin = self._seen.get(seen)
        if twin is not None and self._reports[twin].data == data \
                and self._reports[twin].facts == rep.facts:
            self._notice(f"{rep.origin}: the same report as {self._reports[twin].origin} "
                         f"(host {rep.hostname}, run {rep.run_id or 'without id'}): counted "
                         f"once")
            return
        self._seen[seen] = len(self._reports)
        self._reports.append(_Report(rep.hostname, rep.machine_id, rep.product_uuid, g,
                                     rep.started, rep.started_at, rep.origin, rep.run_id,
                                     self._fact_sets.setdefault(rep.facts, rep.facts), data))

    def _encode(self, g: int, items: Iterable[tuple[str, str, str, str, str, str | None]],
                origin: str) -> array[int]:
        """The report's results as triples (key, status, value).  Past the key or value
        table's bound, a result still counts for its rule's status; its value is not
        compared (one problem line per table)."""
        keys, values, order = self._keys, self._values, self._rule_order[g]
        data = array("i")
        for rule_id, subject, status, _severity, _title, actual in items:
            k = keys.get((g, rule_id, subject))
            v = -1
            if k is None:
                order.setdefault(rule_id, None)
                if len(keys) >= bounds.MAX_KEYS:
                    self._overflowed("keys", origin)
                    subject, actual = "", None
                k = keys.get((g, rule_id, subject))
                if k is None:
                    k = keys[(g, rule_id, subject)] = len(keys)
            if actual is not None:
                v = values.get(actual, -1)
                if v < 0:
                    if len(values) >= bounds.MAX_VALUES:
                        self._overflowed("values", origin)
                    else:
                        v = values[actual] = len(values)
            data.extend((k, _STATUS_CODE[status], v))
        return data

    def _overflowed(self, table: str, origin: str) -> None:
        if table not in self._overflow:
            self._overflow.add(table)
            limit = bounds.MAX_KEYS if table == "keys" else bounds.MAX_VALUES
            what = "rule subjects" if table == "keys" else "values"
            self.problem(f"{origin}: more than {limit:,} distinct {what} in the fleet: from "
                         f"here on, results count for their rules but their values are not "
                         f"compared between nodes")

    def finish(self, problems: Iterable[str] = ()) -> Fleet:
        """The fleet of every report added so far (``problems``: more lines, first)."""
        lines = list(problems)
        keys = identity.resolve([(r.hostname, r.machine_id, r.product_uuid)
                                 for r in self._reports])
        nodes, node_of = _nodes(self._reports, keys)
        groups = sorted(self._groups, key=self._groups.__getitem__)
        key_info = sorted(self._keys, key=self._keys.__getitem__)
        values = sorted(self._values, key=self._values.__getitem__)
        views, drifts, facts = [], [], []
        for gi, group in enumerate(groups):
            mine = [i for i, r in enumerate(self._reports) if r.group == gi]
            if not mine:
                continue
            views.append(self._view(gi, group, mine, node_of, key_info))
            newest = _newest(self._reports, mine, node_of)
            drifts += drift.value_drift(group.label, [(n, self._reports[i].data)
                                                      for n, i in newest], key_info, values)
            facts += drift.fact_drift(group.label, [(n, self._reports[i].facts)
                                                    for n, i in newest])
            claims = self._claims[gi].problem(f"reports of {group.label}")
            if claims is not None:
                self.problem(claims)
        conflicts = _conflicts(self._reports, nodes, node_of)
        for c in conflicts:
            self.problem(_conflict_line(nodes[c.node], c))
        for line in self._judges.problems:
            self.problem(line)
        for label in self._judges.unused():
            self._notice(f"{label}: no report names this ruleset and version")
        every = lines + self.problems
        kept = every[:bounds.MAX_PROBLEMS]
        return Fleet(nodes=tuple(nodes), groups=tuple(views), drift=tuple(drifts),
                     facts=tuple(facts), identity=identity.findings(nodes),
                     conflicts=tuple(conflicts), problems=tuple(kept),
                     problems_not_kept=self.problems_not_kept + len(every) - len(kept),
                     notices=tuple(self.notices), reports=self.reports)

    def _view(self, gi: int, group: Group, mine: list[int], node_of: list[int],
              key_info: list[tuple[int, str, str]]) -> GroupView:
        """One group: per node and rule the worst status over its results and reports."""
        rule_ids = list(self._rule_order[gi])
        pos = {r: i for i, r in enumerate(rule_ids)}
        key_rule = {k: pos[rule] for k, (g, rule, _) in enumerate(key_info) if g == gi}
        worst: dict[int, list[str]] = {}
        for i in mine:
            w = worst.setdefault(node_of[i], [""] * len(rule_ids))
            d = self._reports[i].data
            for j in range(0, len(d), 3):
                r = key_rule[d[j]]
                s = STATUSES[d[j + 1]]
                if not w[r] or _RANK[s] < _RANK[w[r]]:
                    w[r] = s
        by_status: list[dict[str, list[int]]] = [defaultdict(list) for _ in rule_ids]
        columns: dict[tuple[str, ...], list[int]] = {}
        for n in sorted(worst):
            for r, s in enumerate(worst[n]):
                if s:
                    by_status[r][s].append(n)
            columns.setdefault(tuple(worst[n]), []).append(n)
        auth = self._authority[gi]
        rows = []
        for r, rule in enumerate(rule_ids):
            severity, title = (auth.rules[rule] if auth.rules is not None
                               else self._claims[gi].rule(rule))
            st = by_status[r]
            rows.append(RuleRow(rule, severity, title,
                                tuple((s, len(st.get(s, ()))) for s in STATUSES),
                                tuple(st.get("fail", ())), tuple(st.get("error", ()))))
        cols = sorted(columns.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
        return GroupView(group, tuple(sorted(worst)), tuple(rows),
                         tuple(Column(tuple(n), s) for s, n in cols), judged_by=auth.label)


def _nodes(reports: Sequence[_Report], keys: Sequence[identity.NodeKey]
           ) -> tuple[list[Node], list[int]]:
    """The distinct nodes (label order) and the node index of each report."""
    members: dict[identity.NodeKey, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        members[key].append(i)
    built = []
    for key, idx in members.items():
        newest = max(idx, key=lambda i: (reports[i].started_at, i))
        r = reports[newest]
        built.append((Node(r.hostname, r.machine_id, r.product_uuid,
                           tuple(sorted({reports[i].hostname for i in idx})), len(idx)), key))
    built.sort(key=lambda nk: (nk[0].hostname, nk[0].machine_id or "",
                               nk[0].product_uuid or "", nk[1]))
    index = {key: n for n, (_node, key) in enumerate(built)}
    return [node for node, _ in built], [index[k] for k in keys]


def _newest(reports: Sequence[_Report], mine: list[int], node_of: list[int]
            ) -> list[tuple[int, int]]:
    """``(node, report)``: each node's newest report among ``mine``, by node."""
    best: dict[int, int] = {}
    for i in mine:
        n = node_of[i]
        if n not in best or (reports[i].started_at, i) > (reports[best[n]].started_at, best[n]):
            best[n] = i
    return sorted(best.items())


def _conflicts(reports: Sequence[_Report], nodes: Sequence[Node], node_of: list[int]
               ) -> list[Conflict]:
    """Nodes claimed by several different reports."""
    by_node: dict[int, list[int]] = defaultdict(list)
    for i, n in enumerate(node_of):
        if nodes[n].reports > 1:
            by_node[n].append(i)
    out = []
    for n in sorted(by_node):
        idx = sorted(by_node[n], key=lambda i: (-reports[i].started_at, i))
        out.append(Conflict(n, tuple(ReportRef(reports[i].origin, reports[i].hostname,
                                               reports[i].started, reports[i].run_id)
                                     for i in idx)))
    return out


MAX_LISTED = 5
"""Reports listed in one conflict's problem line (the JSON report lists them all)."""


def _conflict_line(node: Node, c: Conflict) -> str:
    ids = ", ".join(f"{what} {v}" for what, v in (("machine id", node.machine_id),
                                                  ("product UUID", node.product_uuid)) if v)
    listed = "; ".join(f"{r.origin} (host {r.hostname}, started {r.started})"
                       for r in c.reports[:MAX_LISTED])
    more = f"; and {len(c.reports) - MAX_LISTED} more" if len(c.reports) > MAX_LISTED else ""
    names = (f" under {len(node.hostnames)} host names" if len(node.hostnames) > 1 else "")
    return (f"{node.hostname}: {len(c.reports)} different reports claim this node"
            f"{names} ({ids or 'no machine id or product UUID'}): {listed}{more}; none "
            f"replaces another, the node counts the worst result of each rule")


def aggregate(reports: Iterable[NodeReport], problems: Iterable[str] = (),
              judges: Judges | None = None) -> Fleet:
    """The fleet of ``reports`` (a convenience for tests and the API)."""
    agg = Aggregator(judges)
    for rep in reports:
        agg.add(rep)
    return agg.finish(problems)
