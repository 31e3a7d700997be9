"""The fleet as one JSON document, valid against ``schemas/fleet.schema.json``.

Host lists are folded (``gpu[001-032,040]``); ``--since`` reads this document back.
"""

from __future__ import annotations

import json
from typing import Any

from aiaudit import __version__
from aiaudit.fleet.gate import exit_code, failing_nodes
from aiaudit.fleet.hostlist import fold
from aiaudit.fleet.model import Drift, Fleet, GroupView

KIND = "aiaudit.fleet"
SCHEMA_VERSION = "1.0"


def _hosts(hosts: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {"count": len(hosts), "hosts": fold(hosts)}


def _group(g: GroupView) -> dict[str, Any]:
    return {
        "label": g.group.label,
        "tool_version": g.group.tool_version,
        "ruleset": g.group.ruleset,
        "ruleset_version": g.group.ruleset_version,
        "ruleset_source": g.group.ruleset_source or None,
        "nodes": _hosts(g.hosts),
        "rules": [{"id": r.rule_id, "severity": r.severity, "title": r.title,
                   "counts": dict(r.counts), "failing": _hosts(r.failing),
                   "error": _hosts(r.erroring)} for r in g.rules],
        "matrix": [{**_hosts(c.hosts), "statuses": list(c.statuses)} for c in g.columns],
    }


def _drift(d: Drift) -> dict[str, Any]:
    return {"group": d.group, "rule": d.rule_id, "subject": d.subject,
            "majority": d.majority, "outliers": _hosts(d.outliers),
            "values": [{"value": v.value, **_hosts(v.hosts)} for v in d.values]}


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
                 "new_nodes": _hosts(s.new_hosts), "gone_nodes": _hosts(s.gone_hosts)}
    return {
        "kind": KIND,
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "aiaudit", "version": __version__},
        "summary": {"reports": fleet.reports, "nodes": fleet.nodes,
                    "groups": len(fleet.groups), "problems": len(fleet.problems),
                    "failing_nodes": len(failing_nodes(fleet, fail_on)),
                    "fail_on": fail_on, "max_failing_nodes": max_failing,
                    "exit_code": int(exit_code(fleet, fail_on, max_failing))},
        "problems": list(fleet.problems),
        "notices": list(fleet.notices),
        "groups": [_group(g) for g in fleet.groups],
        "drift": [_drift(d) for d in fleet.drift],
        "host_facts": [_drift(d) for d in fleet.facts],
        "identity": [{"kind": f.kind, "severity": f.severity, "key": f.key,
                      **_hosts(f.hosts), "machine_ids": list(f.machine_ids)}
                     for f in fleet.identity],
        "since": since,
    }


def render(fleet: Fleet, fail_on: str, max_failing: int) -> str:
    """The fleet as JSON text."""
    return json.dumps(fleet_dict(fleet, fail_on, max_failing), indent=1,
                      ensure_ascii=False) + "\n"
