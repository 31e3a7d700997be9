"""The fleet as one JSON document, valid against ``schemas/fleet.schema.json``.

Host lists are folded (``gpu[001-032,040]``); ``--since`` reads this document back.  Every
``count`` is a number of nodes (by identity), every ``hosts`` their names: two nodes that
share a name are ``{"count": 2, "hosts": "gpu07"}``, and ``identity`` says why.
"""

from __future__ import annotations

import json
from typing import Any

from aiaudit import __version__
from aiaudit.fleet.gate import exit_code, failing_nodes
from aiaudit.fleet.hostlist import fold
from aiaudit.fleet.model import Drift, Fleet, GroupView

KIND = "aiaudit.fleet"
SCHEMA_VERSION = "1.1"
"""1.1: ``summary.conflicts``, ``conflicts``, ``groups[].judged_by``, identity kinds
``duplicate-product-uuid`` and ``product_uuids``; counts are nodes by identity."""


def _names(hosts: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {"count": len(hosts), "hosts": fold(hosts)}


def _group(fleet: Fleet, g: GroupView) -> dict[str, Any]:
    def hosts(nodes: tuple[int, ...]) -> dict[str, Any]:
        return {"count": len(nodes), "hosts": fold(fleet.names(nodes))}

    return {
        "label": g.group.label,
        "tool_version": g.group.tool_version,
        "ruleset": g.group.ruleset,
        "ruleset_version": g.group.ruleset_version,
        "ruleset_source": g.group.ruleset_source or None,
        "judged_by": g.judged_by,
        "nodes": hosts(g.nodes),
        "rules": [{"id": r.rule_id, "severity": r.severity, "title": r.title,
                   "counts": dict(r.counts), "failing": hosts(r.failing),
                   "error": hosts(r.erroring)} for r in g.rules],
        "matrix": [{**hosts(c.nodes), "statuses": list(c.statuses)} for c in g.columns],
    }


def _drift(fleet: Fleet, d: Drift) -> dict[str, Any]:
    return {"group": d.group, "rule": d.rule_id, "subject": d.subject,
            "majority": d.majority,
            "outliers": {"count": len(d.outliers), "hosts": fold(fleet.names(d.outliers))},
            "values": [{"value": v.value, "count": len(v.nodes),
                        "hosts": fold(fleet.names(v.nodes))} for v in d.values]}


def fleet_dict(fleet: Fleet, fail_on: str, max_failing: int) -> dict[str, Any]:
    """The JSON document as data."""
    since = None
    if fleet.since is not None:
        s = fleet.since
        since = {"previous": s.origin,
                 "worse": [{"host": c.host, "rules": list(c.worse)}
                           for c in s.changes if c.worse],
                 "better": [{"host": c.host, "rules": list(c.better)}
                            for c in s.changes if c.better],
                 "new_nodes": _names(s.new_hosts), "gone_nodes": _names(s.gone_hosts)}
    return {
        "kind": KIND,
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "aiaudit", "version": __version__},
        "summary": {"reports": fleet.reports, "nodes": fleet.node_count,
                    "groups": len(fleet.groups), "problems": fleet.problem_count,
                    "conflicts": len(fleet.conflicts),
                    "failing_nodes": len(failing_nodes(fleet, fail_on)),
                    "fail_on": fail_on, "max_failing_nodes": max_failing,
                    "exit_code": int(exit_code(fleet, fail_on, max_failing))},
        "problems": list(fleet.problems),
        "notices": list(fleet.notices),
        "groups": [_group(fleet, g) for g in fleet.groups],
        "drift": [_drift(fleet, d) for d in fleet.drift],
        "host_facts": [_drift(fleet, d) for d in fleet.facts],
        "identity": [{"kind": f.kind, "severity": f.severity, "key": f.key,
                      "count": len(f.nodes), "hosts": fold(fleet.names(f.nodes)),
                      "machine_ids": list(f.machine_ids),
                      "product_uuids": list(f.product_uuids)}
                     for f in fleet.identity],
        "conflicts": [{"host": fleet.nodes[c.node].hostname,
                       "machine_id": fleet.nodes[c.node].machine_id,
                       "product_uuid": fleet.nodes[c.node].product_uuid,
                       "reports": [{"origin": r.origin, "hostname": r.hostname,
                                    "started": r.started, "run_id": r.run_id}
                                   for r in c.reports]}
                      for c in fleet.conflicts],
        "since": since,
    }


def render(fleet: Fleet, fail_on: str, max_failing: int) -> str:
    """The fleet as JSON text."""
    return json.dumps(fleet_dict(fleet, fail_on, max_failing), indent=1,
                      ensure_ascii=False) + "\n"
