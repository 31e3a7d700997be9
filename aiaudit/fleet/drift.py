"""Drift: nodes that disagree on a value even when each passes on its own.

For each rule and subject, the ``actual`` values of the nodes are counted; when one value is
held by more than half of the nodes that report it, every node with another value is an
outlier (three nodes on driver 535 while 125 run 550; one node whose governor reverted).
Without such a majority the distribution is still shown, with no outliers: there is no
"normal" to differ from.  Host facts (kernel, OS, image, scan mode) are compared the same
way.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Sequence

from aiaudit.fleet.model import Drift, ValueShare

MAX_VALUES = 50
"""Distinct values listed per subject; the rest are counted as one share."""


def distribution(label: str, rule_id: str, subject: str,
                 hosts_by_value: dict[str, list[str]]) -> Drift | None:
    """The drift of one subject, or ``None`` when every node agrees."""
    if len(hosts_by_value) < 2:
        return None
    shares = sorted(hosts_by_value.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    total = sum(len(h) for _, h in shares)
    top_value, top_hosts = shares[0]
    majority = top_value if len(top_hosts) * 2 > total else None
    outliers: tuple[str, ...] = ()
    if majority is not None:
        outliers = tuple(sorted(h for v, hs in shares[1:] for h in hs))
    listed = [ValueShare(v, tuple(sorted(h))) for v, h in shares[:MAX_VALUES]]
    if len(shares) > MAX_VALUES:
        rest = sorted(h for _, hs in shares[MAX_VALUES:] for h in hs)
        listed.append(ValueShare(f"({len(shares) - MAX_VALUES} other values)", tuple(rest)))
    return Drift(label, rule_id, subject, tuple(listed), majority, outliers)


def value_drift(label: str, nodes: Sequence[Any], key_info: Sequence[tuple[int, str, str]],
                values: Sequence[str]) -> list[Drift]:
    """Drift of the ``actual`` values of one group's nodes (``node.data`` triples: key,
    status, value index; see :mod:`aiaudit.fleet.aggregate`)."""
    by_key: dict[int, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for n in nodes:
        d = n.data
        for i in range(0, len(d), 3):
            v = d[i + 2]
            if v >= 0:
                by_key[d[i]][v].append(n.hostname)
    out = []
    for k in sorted(by_key, key=lambda k: key_info[k][1:]):
        dist = by_key[k]
        if len(dist) < 2:
            continue
        _, rule, subject = key_info[k]
        found = distribution(label, rule, subject, {values[v]: h for v, h in dist.items()})
        if found is not None:
            out.append(found)
    return out


def fact_drift(label: str, nodes: Iterable[tuple[str, tuple[tuple[str, str], ...]]]
               ) -> list[Drift]:
    """Drift of the host facts (``(hostname, facts)`` per node)."""
    by_fact: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for host, facts in nodes:
        for name, value in facts:
            by_fact[name][value].append(host)
    out = []
    for name in sorted(by_fact):
        found = distribution(label, "host", name, by_fact[name])
        if found is not None:
            out.append(found)
    return out
