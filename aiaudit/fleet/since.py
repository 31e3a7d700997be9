"""``--since PREVIOUS-FLEET.json``: which nodes got worse or better.

The previous fleet report (``aiaudit fleet --format json``) lists, per rule, the failing
nodes as host lists; a node is compared by host name (the report names nodes by host list),
rule by rule id (across groups, so a ruleset upgrade does not hide a change).  A rule the
node fails now and did not then makes it worse; one it failed then and does not now,
better.  Nodes only in one of the two reports are listed as new or gone.

The previous report is an input like any report, so what it can cost is bounded: at most
:data:`~aiaudit.fleet.bounds.MAX_SINCE_BYTES` of JSON, decoded only under the same estimate
as a node's report; node lists expand to at most
:data:`~aiaudit.fleet.bounds.MAX_REPORTS` names (each kept once, as an index), failing
lists to at most :data:`~aiaudit.fleet.bounds.MAX_SINCE_NAMES` names in all and each to
at most its group's number of nodes (each a 4-byte index; a failing host must be one of the
report's nodes).  A 13 KB list of ranges cost
2.6 GB before (issue 25).  A previous report that cannot be used is one problem line
(:class:`SinceError`) and the fleet is reported without the comparison.
"""

from __future__ import annotations

import json
from array import array
from collections import defaultdict
from typing import Any, Iterator

from aiaudit.core.errors import UsageError
from aiaudit.core.startup.records import record
from aiaudit.fleet import bounds
from aiaudit.fleet.hostlist import Budget, HostlistError, iter_expand
from aiaudit.fleet.model import Fleet, NodeChange, Since


class SinceError(ValueError):
    """A ``--since`` report that cannot be used; the message starts with its file name."""


@record
class Previous:
    """What a previous fleet report says: its nodes and, per rule, the failing ones."""

    hosts: tuple[str, ...]
    """Host names of its nodes (each once)."""
    failing: dict[str, array[int]]
    """Rule id -> indices into :attr:`hosts` of the nodes that failed it."""


def load_previous(path: str) -> Previous:
    """The previous fleet report in file ``path``; :class:`SinceError` if unusable."""
    from aiaudit.core.inputs import read_input

    try:
        text = read_input(path, "fleet report", bounds.MAX_SINCE_BYTES)
    except UsageError as exc:
        raise SinceError(str(exc)) from None
    return parse_previous(text, path)


def parse_previous(text: str, origin: str) -> Previous:
    """The previous fleet report in ``text`` (``origin`` names it in errors)."""
    need = bounds.decoded_estimate(text)
    if need > bounds.MAX_DECODED:
        raise SinceError(f"{origin}: would take about {need // 1048576} MB to decode (at "
                         f"most {bounds.MAX_DECODED // 1048576} MB)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SinceError(f"{origin}: not a fleet JSON report: line {exc.lineno} column "
                         f"{exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise SinceError(f"{origin}: not a fleet JSON report: nested too deeply") from None
    except ValueError:  # int(): more than 4,300 digits
        raise SinceError(f"{origin}: not a fleet JSON report: an integer of more than "
                         f"4,300 digits") from None
    groups = _groups(data, origin)
    names: dict[str, int] = {}
    node_budget = Budget(bounds.MAX_REPORTS)
    sizes = []
    for gi, g in groups:
        before = node_budget.left
        for name in _expand(g["nodes"]["hosts"], node_budget, origin, f"groups/{gi}/nodes"):
            names.setdefault(name, len(names))
        sizes.append(before - node_budget.left)
    failing: dict[str, array[int]] = defaultdict(lambda: array("i"))
    total = Budget(bounds.MAX_SINCE_NAMES)
    for (gi, g), size in zip(groups, sizes, strict=True):
        for ri, row in enumerate(g["rules"]):
            where = f"groups/{gi}/rules/{ri}/failing"
            into = failing[row["id"]]
            budget = Budget(min(size, total.left))  # a list names each node once at most
            for name in _expand(row["failing"]["hosts"], budget, origin, where):
                index = names.get(name)
                if index is None:
                    raise SinceError(f"{origin}: {where}: {name} is not one of the report's "
                                     f"nodes")
                into.append(index)
            total.take(budget.limit - budget.left)
    return Previous(tuple(names), dict(failing))


def _expand(text: str, budget: Budget, origin: str, where: str) -> Iterator[str]:
    try:
        yield from iter_expand(text, budget)
    except HostlistError as exc:
        raise SinceError(f"{origin}: {where}: bad host list: {exc}") from None


def _groups(data: Any, origin: str) -> list[tuple[int, dict[str, Any]]]:
    """The groups of a fleet report, with the fields ``--since`` reads checked."""
    def bad(where: str, what: str) -> SinceError:
        return SinceError(f"{origin}: not a valid aiaudit fleet JSON report: {where}: {what}")

    if not isinstance(data, dict) or data.get("kind") != "aiaudit.fleet":
        raise bad("kind", "not 'aiaudit.fleet'")
    version = data.get("schema_version")
    if not isinstance(version, str) or not version.startswith("1."):
        raise bad("schema_version", "not a version-1 fleet report")
    groups = data.get("groups")
    if not isinstance(groups, list):
        raise bad("groups", "missing or not a list")
    out = []
    for gi, g in enumerate(groups):
        if not isinstance(g, dict) or not _hosts_field(g.get("nodes")):
            raise bad(f"groups/{gi}/nodes", "missing, or its hosts not a string")
        rules = g.get("rules")
        if not isinstance(rules, list):
            raise bad(f"groups/{gi}/rules", "missing or not a list")
        for ri, row in enumerate(rules):
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise bad(f"groups/{gi}/rules/{ri}/id", "missing or not a string")
            if not _hosts_field(row.get("failing")):
                raise bad(f"groups/{gi}/rules/{ri}/failing", "missing, or its hosts not a "
                                                              "string")
        out.append((gi, g))
    return out


def _hosts_field(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("hosts"), str)


def failing_by_host(fleet: Fleet) -> tuple[dict[str, set[str]], set[str]]:
    """``{host name: failing rule ids}`` and every host name of the fleet (nodes that
    share a name count together: the previous report can only name them together)."""
    failing: dict[str, set[str]] = defaultdict(set)
    hosts = {n.hostname for n in fleet.nodes}
    for g in fleet.groups:
        for row in g.rules:
            for h in fleet.names(row.failing):
                failing[h].add(row.rule_id)
    return failing, hosts


def compare(fleet: Fleet, previous: Previous, origin: str) -> Since:
    """The change from ``previous`` (from :func:`load_previous`) to ``fleet``."""
    now, now_hosts = failing_by_host(fleet)
    before_hosts = set(previous.hosts)
    common = now_hosts & before_hosts
    now_by_rule: dict[str, set[str]] = defaultdict(set)
    for host, rules in now.items():
        for rule in rules:
            now_by_rule[rule].add(host)
    worse: dict[str, list[str]] = defaultdict(list)
    better: dict[str, list[str]] = defaultdict(list)
    for rule in sorted(set(now_by_rule) | set(previous.failing)):
        then = {previous.hosts[i] for i in previous.failing.get(rule, ())}
        current = now_by_rule.get(rule, set())
        for h in (current - then) & common:
            worse[h].append(rule)
        for h in (then - current) & common:
            better[h].append(rule)
    changes = [NodeChange(h, tuple(worse.get(h, ())), tuple(better.get(h, ())))
               for h in sorted(set(worse) | set(better))]
    return Since(origin, tuple(changes), tuple(sorted(now_hosts - before_hosts)),
                 tuple(sorted(before_hosts - now_hosts)))
