"""Propose a node class from a fleet's saved reports: the values most nodes share."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable, Mapping

from aiaudit.core.startup.records import record
from aiaudit.linux.inventory.model import Fact, Unknown

FACTS_CHECK = "inventory.facts"
"""The check whose result carries a node's facts in a report."""


@record
class NodeFacts:
    """One node's facts, as its report recorded them."""

    node: str
    """The node's label (hostname, with the machine id when hostnames collide)."""
    facts: Mapping[str, Any]
    sources: Mapping[str, str]
    live: Mapping[str, bool]


@record
class Proposal:
    """The majority facts, what was left out, and who deviates."""

    facts: tuple[Fact, ...]
    unknown: tuple[Unknown, ...]
    deviations: tuple[tuple[str, tuple[str, ...]], ...]
    """``(fact, nodes that differ from the majority)``."""


def node_facts(report: Mapping[str, Any]) -> NodeFacts | None:
    """The facts a saved JSON report recorded (``None`` when its ruleset has no
    ``inventory.facts`` rule)."""
    for r in report.get("results") or ():
        if isinstance(r, Mapping) and r.get("check") == FACTS_CHECK:
            data = r.get("data") or {}
            host = report.get("host") or {}
            label = str(host.get("hostname") or "?")
            mid = host.get("machine_id")
            return NodeFacts(f"{label} ({str(mid)[:12]})" if mid else label,
                             data.get("facts") or {}, data.get("sources") or {},
                             data.get("live") or {})
    return None


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def propose(nodes: Iterable[NodeFacts], share: float,
            templates: Mapping[str, Fact] | None = None) -> Proposal:
    """For each fact, the value at least ``share`` (0-1] of the nodes that report it
    have; a fact without such a majority is left out (with its split).  ``templates``
    gives each fact's title, comparison and severity (the collectors' own)."""
    nodes = list(nodes)
    names = sorted({n for node in nodes for n in node.facts})
    facts: list[Fact] = []
    unknown: list[Unknown] = []
    deviations: list[tuple[str, tuple[str, ...]]] = []
    for name in names:
        having = [n for n in nodes if name in n.facts]
        counts = Counter(_key(n.facts[name]) for n in having)
        best, count = counts.most_common(1)[0]
        if count < share * len(nodes):
            split = ", ".join(f"{c} node(s): {k[:60]}" for k, c in counts.most_common(3))
            unknown.append(Unknown(name, f"no value on {share:.0%} of {len(nodes)} nodes "
                                         f"({split})"))
            continue
        first = next(n for n in having if _key(n.facts[name]) == best)
        t = (templates or {}).get(name)
        facts.append(Fact(name, t.title if t else name, json.loads(best),
                          first.sources.get(name, ""), bool(first.live.get(name, True)),
                          t.compare if t else "equal", t.tolerance if t else 0.0,
                          t.severity if t else "high"))
        odd = tuple(n.node for n in nodes if _key(n.facts.get(name)) != best)
        if odd:
            deviations.append((name, odd))
    return Proposal(tuple(facts), tuple(unknown), tuple(deviations))
