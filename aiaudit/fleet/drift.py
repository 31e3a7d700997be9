"""Drift: nodes that disagree on a value even when each passes on its own.

For each rule and subject, the ``actual`` values of the nodes are counted; when one value is
held by more than half of the nodes that report it, every node with another value is an
outlier (three nodes on driver 535 while 125 run 550; one node whose governor reverted).
Without such a majority the distribution is still shown, with no outliers: there is no
"normal" to differ from.  Host facts (kernel, OS, image, scan mode) and the class facts
every ``dl-training`` scan records (``inventory.facts``: GPU model, count, VBIOS, PCIe
links, HCAs, memory, CPUs, driver stack; :func:`aiaudit.fleet.extract.class_facts`) are
compared the same way: "gpu.nvidia.vbios: 96.00.89.00.01 (8 devices) on 30/32 nodes".
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence

from aiaudit.fleet.model import Drift, ValueShare

MAX_VALUES = 50
"""Distinct values listed per subject; the rest are counted as one share."""


def distribution(label: str, rule_id: str, subject: str,
                 nodes_by_value: dict[str, list[int]]) -> Drift | None:
    """The drift of one subject (each node under one value), or ``None`` when every node
    agrees."""
    if len(nodes_by_value) < 2:
        return None
    shares = sorted(nodes_by_value.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    total = sum(len(n) for _, n in shares)
    top_value, top_nodes = shares[0]
    majority = top_value if len(top_nodes) * 2 > total else None
    outliers: tuple[int, ...] = ()
    if majority is not None:
        outliers = tuple(sorted(n for _v, ns in shares[1:] for n in ns))
    listed = [ValueShare(v, tuple(sorted(n))) for v, n in shares[:MAX_VALUES]]
    if len(shares) > MAX_VALUES:
        rest = sorted(n for _, ns in shares[MAX_VALUES:] for n in ns)
        listed.append(ValueShare(f"({len(shares) - MAX_VALUES} other values)", tuple(rest)))
    return Drift(label, rule_id, subject, tuple(listed), majority, outliers)


def value_drift(label: str, nodes: Sequence[tuple[int, Sequence[int]]],
                key_info: Sequence[tuple[int, str, str]], values: Sequence[str]) -> list[Drift]:
    """Drift of the ``actual`` values of one group's nodes: ``(node, data)`` with ``data``
    the triples key, status, value index of the node's newest report (see
    :mod:`aiaudit.fleet.aggregate`); a subject given twice in one report counts its first
    value."""
    by_key: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for n, d in nodes:
        seen: set[int] = set()
        for i in range(0, len(d), 3):
            k, v = d[i], d[i + 2]
            if v >= 0 and k not in seen:
                seen.add(k)
                by_key[k][v].append(n)
    out = []
    for k in sorted(by_key, key=lambda k: key_info[k][1:]):
        dist = by_key[k]
        if len(dist) < 2:
            continue
        _, rule, subject = key_info[k]
        found = distribution(label, rule, subject, {values[v]: n for v, n in dist.items()})
        if found is not None:
            out.append(found)
    return out


def fact_drift(label: str, nodes: Iterable[tuple[int, tuple[tuple[str, str], ...]]]
               ) -> list[Drift]:
    """Drift of the host facts (``(node, facts)`` per node)."""
    by_fact: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for node, facts in nodes:
        for name, value in facts:
            by_fact[name][value].append(node)
    out = []
    for name in sorted(by_fact):
        found = distribution(label, "host", name, by_fact[name])
        if found is not None:
            out.append(found)
    return out
