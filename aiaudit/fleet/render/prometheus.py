"""The fleet in the Prometheus text format, for one dashboard of the cluster.

Written (atomically) into node_exporter's textfile directory on the controller, or served
by any static file exporter.  Series (all gauges):

- ``aiaudit_fleet_rule_failing_nodes{ruleset,ruleset_version,tool_version,rule,severity}``:
  nodes failing the rule (alert on ``> 0`` for high and critical);
- ``aiaudit_fleet_rule_nodes{...,status}``: nodes per status of each rule;
- ``aiaudit_fleet_nodes{ruleset,ruleset_version,tool_version}`` (per group),
  ``aiaudit_fleet_distinct_nodes`` (the fleet: a node in two groups counts once),
  ``aiaudit_fleet_reports``, ``aiaudit_fleet_input_problems``,
  ``aiaudit_fleet_conflicts``, ``aiaudit_fleet_failing_nodes{fail_on}``;
- ``aiaudit_fleet_drift_outliers{ruleset,...,rule,subject}``: nodes off the majority value,
  for the :data:`~aiaudit.fleet.bounds.MAX_PROM_DRIFT` subjects with the most outliers
  (``aiaudit_fleet_drift_subjects`` counts them all: a hostile report with 20,000 subjects
  must not make a 400 MB textfile);
- ``aiaudit_fleet_identity_findings{kind}``: cloned machine ids, reused host names, shared
  product UUIDs.

Label values are escaped as the format requires after the control characters are made
visible (:func:`aiaudit.core.escape.human_safe`: a raw ESC or bidi override never reaches a
dashboard), and no label set repeats within a metric.
"""

from __future__ import annotations

from typing import Mapping

from aiaudit.core.escape import human_safe
from aiaudit.fleet import bounds
from aiaudit.fleet.extract import STATUSES
from aiaudit.fleet.gate import failing_nodes
from aiaudit.fleet.model import Fleet
from aiaudit.reporters.prometheus import escape_help, escape_label


class _Doc:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def metric(self, name: str, help_text: str,
               samples: list[tuple[Mapping[str, object], int]]) -> None:
        self.lines += [f"# HELP {name} {escape_help(help_text)}", f"# TYPE {name} gauge"]
        seen: set[str] = set()
        for labels, value in samples:
            lab = ("{" + ",".join(f'{k}="{escape_label(human_safe(v))}"'
                                  for k, v in labels.items()) + "}" if labels else "")
            if lab not in seen:
                seen.add(lab)
                self.lines.append(f"{name}{lab} {value}")


def render(fleet: Fleet, fail_on: str, max_failing: int) -> str:
    """The text exposition (format 0.0.4)."""
    doc = _Doc()
    groups = [({"ruleset": g.group.ruleset, "ruleset_version": g.group.ruleset_version,
                "tool_version": g.group.tool_version}, g) for g in fleet.groups]
    doc.metric("aiaudit_fleet_reports", "Reports (or event runs) aggregated",
               [({}, fleet.reports)])
    doc.metric("aiaudit_fleet_input_problems", "Inputs that could not be used",
               [({}, fleet.problem_count)])
    doc.metric("aiaudit_fleet_conflicts", "Nodes claimed by several different reports",
               [({}, len(fleet.conflicts))])
    doc.metric("aiaudit_fleet_distinct_nodes",
               "Distinct nodes (machine id and product UUID) in the fleet",
               [({}, fleet.node_count)])
    doc.metric("aiaudit_fleet_nodes", "Distinct nodes (machine id and product UUID) per group",
               [(labels, len(g.nodes)) for labels, g in groups])
    doc.metric("aiaudit_fleet_failing_nodes",
               "Nodes failing at least one rule at or above the fail-on severity",
               [({"fail_on": fail_on}, len(failing_nodes(fleet, fail_on)))])
    doc.metric("aiaudit_fleet_rule_failing_nodes", "Nodes on which the rule fails (unwaived)",
               [({**labels, "rule": r.rule_id, "severity": r.severity}, len(r.failing))
                for labels, g in groups for r in g.rules])
    doc.metric("aiaudit_fleet_rule_nodes", "Nodes per status of the rule",
               [({**labels, "rule": r.rule_id, "severity": r.severity, "status": s},
                 r.count(s)) for labels, g in groups for r in g.rules for s in STATUSES])
    by_label = {g.group.label: labels for labels, g in groups}
    drifts = (*fleet.drift, *fleet.facts)
    doc.metric("aiaudit_fleet_drift_subjects", "Subjects and host facts whose values differ "
               "between nodes", [({}, len(drifts))])
    shown = sorted(drifts, key=lambda d: -len(d.outliers))[:bounds.MAX_PROM_DRIFT]
    doc.metric("aiaudit_fleet_drift_outliers",
               "Nodes whose value differs from the majority of the fleet",
               [({**by_label.get(d.group, {}), "rule": d.rule_id, "subject": d.subject},
                 len(d.outliers)) for d in shown])
    kinds = {"duplicate-machine-id": 0, "duplicate-hostname": 0, "duplicate-product-uuid": 0}
    for f in fleet.identity:
        kinds[f.kind] += 1
    doc.metric("aiaudit_fleet_identity_findings",
               "Machine ids shared by several host names, host names with several ids",
               [({"kind": k}, v) for k, v in kinds.items()])
    return "\n".join(doc.lines) + "\n"
