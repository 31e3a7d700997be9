"""The exit code of ``aiaudit fleet``: ``scan``'s codes, judged over the fleet.

- 0: no rule at or above ``--fail-on`` fails on more than ``--max-failing-nodes`` nodes;
- 1: one does (identity findings count as failures of their severity on their nodes);
- 2: usage error, or not one usable report among the inputs;
- 3: no such failure, but a rule at or above ``--fail-on`` could not be evaluated on more
  than ``--max-failing-nodes`` nodes;
- 4: internal error;
- 5: some input was unusable (one line each on stderr), the rest was aggregated, and the
  fleet would otherwise exit 0 or 3.  A fleet that fails exits 1 even then.

Nodes are counted fleet-wide, by identity: a rule's failing nodes are those of every group
(aiaudit version and ruleset) together, so a rolling upgrade that splits the fleet in two
groups does not double the threshold (issue 25), and a node that is in two groups (two
reports of different versions claim it) counts once.
"""

from __future__ import annotations

from collections import defaultdict

from aiaudit.core.errors import ExitCode
from aiaudit.fleet.extract import SEVERITIES
from aiaudit.fleet.model import Fleet


def _rank(severity: str) -> int:
    return SEVERITIES.index(severity)


def nodes_per_rule(fleet: Fleet, fail_on: str, status: str = "fail") -> dict[str, set[int]]:
    """Per rule id, the nodes (of every group) where the rule, at or above ``fail_on`` in
    that group's ruleset, has ``status`` (``fail`` or ``error``)."""
    floor = _rank(fail_on)
    out: dict[str, set[int]] = defaultdict(set)
    for g in fleet.groups:
        for row in g.rules:
            if _rank(row.severity) >= floor:
                out[row.rule_id].update(row.failing if status == "fail" else row.erroring)
    return out


def over_threshold(fleet: Fleet, fail_on: str, max_failing: int) -> list[tuple[str, int]]:
    """``(rule or identity kind, failing nodes)`` for each gate failure, worst first."""
    out = {rule: len(nodes) for rule, nodes in nodes_per_rule(fleet, fail_on).items()
           if len(nodes) > max_failing}
    floor = _rank(fail_on)
    kinds: dict[str, set[int]] = defaultdict(set)
    for f in fleet.identity:
        if _rank(f.severity) >= floor:
            kinds[f.kind].update(f.nodes)
    out.update({kind: len(nodes) for kind, nodes in kinds.items() if len(nodes) > max_failing})
    return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))


def exit_code(fleet: Fleet, fail_on: str, max_failing: int = 0) -> ExitCode:
    """The exit code for ``fleet`` (see the module docstring)."""
    if over_threshold(fleet, fail_on, max_failing):
        return ExitCode.FAILED
    if fleet.problem_count:
        return ExitCode.BAD_INPUT
    if any(len(nodes) > max_failing
           for nodes in nodes_per_rule(fleet, fail_on, "error").values()):
        return ExitCode.NOT_EVALUATED
    return ExitCode.OK


def failing_nodes(fleet: Fleet, fail_on: str) -> set[int]:
    """Nodes that fail at least one rule at or above ``fail_on``."""
    out: set[int] = set()
    for nodes in nodes_per_rule(fleet, fail_on).values():
        out |= nodes
    return out
