"""The exit code of ``aiaudit fleet``: ``scan``'s codes, judged over the fleet.

- 0: no rule at or above ``--fail-on`` fails on more than ``--max-failing-nodes`` nodes;
- 1: one does (identity findings count as failures of their severity on their nodes);
- 2: usage error, or not one usable report among the inputs;
- 3: no such failure, but a rule at or above ``--fail-on`` could not be evaluated on more
  than ``--max-failing-nodes`` nodes;
- 4: internal error;
- 5: some input was unusable (one line each on stderr), the rest was aggregated, and the
  fleet would otherwise exit 0 or 3.  A fleet that fails exits 1 even then.
"""

from __future__ import annotations

from aiaudit.core.errors import ExitCode
from aiaudit.fleet.extract import SEVERITIES
from aiaudit.fleet.model import Fleet


def _rank(severity: str) -> int:
    return SEVERITIES.index(severity)


def over_threshold(fleet: Fleet, fail_on: str, max_failing: int) -> list[tuple[str, int]]:
    """``(rule or identity kind, failing nodes)`` for each gate failure, worst first."""
    floor = _rank(fail_on)
    out: dict[str, int] = {}
    for g in fleet.groups:
        for row in g.rules:
            if _rank(row.severity) >= floor and len(row.failing) > max_failing:
                out[row.rule_id] = max(out.get(row.rule_id, 0), len(row.failing))
    for f in fleet.identity:
        if _rank(f.severity) >= floor and len(f.hosts) > max_failing:
            out[f.kind] = out.get(f.kind, 0) + len(f.hosts)
    return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))


def exit_code(fleet: Fleet, fail_on: str, max_failing: int = 0) -> ExitCode:
    """The exit code for ``fleet`` (see the module docstring)."""
    if over_threshold(fleet, fail_on, max_failing):
        return ExitCode.FAILED
    if fleet.problems:
        return ExitCode.BAD_INPUT
    floor = _rank(fail_on)
    if any(_rank(row.severity) >= floor and len(row.erroring) > max_failing
           for g in fleet.groups for row in g.rules):
        return ExitCode.NOT_EVALUATED
    return ExitCode.OK


def failing_nodes(fleet: Fleet, fail_on: str) -> set[str]:
    """Nodes that fail at least one rule at or above ``fail_on``."""
    floor = _rank(fail_on)
    return {h for g in fleet.groups for row in g.rules if _rank(row.severity) >= floor
            for h in row.failing}
