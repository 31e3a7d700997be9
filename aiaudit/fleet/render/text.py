"""The fleet for a terminal: summary, top failing rules with their host lists, outliers,
host facts, identity findings, changes since a previous report."""

from __future__ import annotations

from aiaudit.core.errors import ExitCode
from aiaudit.core.escape import text_safe
from aiaudit.fleet.extract import SEVERITIES
from aiaudit.fleet.gate import exit_code, failing_nodes, over_threshold
from aiaudit.fleet.hostlist import fold
from aiaudit.fleet.model import Drift, Fleet, GroupView

MAX_LIST = 300
"""Characters of a host list shown on one line (the JSON report has them all)."""
_VERDICT = {ExitCode.OK: "PASS", ExitCode.FAILED: "FAIL",
            ExitCode.NOT_EVALUATED: "NOT EVALUATED", ExitCode.BAD_INPUT: "INCOMPLETE INPUT"}


def _one(text: str) -> str:
    """One line: control characters and newlines from a hostile report become spaces."""
    return " ".join(text_safe(text).replace("\x1b", " ").split())


def hostlist(hosts: tuple[str, ...] | list[str], limit: int = MAX_LIST) -> str:
    """A folded host list, shortened to ``limit`` characters with a count."""
    text = fold(hosts)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(",", 1)[0]
    return f"{cut},... ({len(hosts)} nodes)"


def _drift_lines(d: Drift) -> list[str]:
    name = d.subject if d.rule_id == "host" else f"{d.rule_id} {d.subject}".rstrip()
    total = sum(len(v.hosts) for v in d.values)
    if d.majority is not None:
        top = d.values[0]
        lines = [f"  {_one(name)}: {_one(top.value)!s} on {len(top.hosts)}/{total} nodes; "
                 f"{len(d.outliers)} outlier(s):"]
        lines += [f"      {_one(v.value)}: {hostlist(v.hosts)}" for v in d.values[1:]]
    else:
        lines = [f"  {_one(name)}: no majority among {total} nodes:"]
        lines += [f"      {_one(v.value)}: {hostlist(v.hosts)}" for v in d.values]
    return lines


def render(fleet: Fleet, fail_on: str, max_failing: int, *, top: int = 20) -> str:
    """The text report."""
    code = exit_code(fleet, fail_on, max_failing)
    gate = over_threshold(fleet, fail_on, max_failing)
    bad = failing_nodes(fleet, fail_on)
    out = [f"aiaudit fleet: {fleet.nodes} node(s) from {fleet.reports} report(s) in "
           f"{len(fleet.groups)} group(s)"
           + (f"; {len(fleet.problems)} input(s) unusable" if fleet.problems else ""),
           f"gate: --fail-on {fail_on}, --max-failing-nodes {max_failing}: "
           f"{_VERDICT.get(code, str(code))}; {len(bad)} node(s) fail a rule at or above "
           f"{fail_on}"]
    if gate:
        more = f", and {len(gate) - top} more" if len(gate) > top else ""
        out.append("  beyond the threshold: "
                   + ", ".join(f"{_one(r)} ({n} nodes)" for r, n in gate[:top]) + more)
    for g in fleet.groups:
        out += _group_lines(g, top)
    out += _drift_section(fleet, top)
    if fleet.facts:
        out += ["", "Host facts that differ:"]
        for d in fleet.facts:
            out += _drift_lines(d)
    out += _identity_lines(fleet)
    out += _since_lines(fleet, top)
    if fleet.notices:
        out += ["", f"Notices ({len(fleet.notices)}):"]
        out += [f"  {_one(n)}" for n in fleet.notices[:top]]
        if len(fleet.notices) > top:
            out.append(f"  ... and {len(fleet.notices) - top} more")
    if fleet.problems:
        out += ["", f"Unusable input ({len(fleet.problems)}; also on stderr):"]
        out += [f"  {_one(p)}" for p in fleet.problems[:top]]
    return "\n".join(out) + "\n"


def _group_lines(g: GroupView, top: int) -> list[str]:
    """One group of nodes: its failing rules, worst first, and the rules not evaluated."""
    out = ["", f"== {_one(g.group.label)}: {len(g.hosts)} node(s) {hostlist(g.hosts)}"]
    failing = sorted((r for r in g.rules if r.failing),
                     key=lambda r: (-SEVERITIES.index(r.severity), -len(r.failing), r.rule_id))
    if failing:
        out.append(f"Failing rules ({len(failing)}), worst first:")
    for r in failing[:top]:
        out.append(f"  {r.severity.upper():<8} {_one(r.rule_id)}  {len(r.failing)}/"
                   f"{len(g.hosts)} fail  {hostlist(r.failing)}")
        if r.title:
            out.append(f"           {_one(r.title)}")
    if len(failing) > top:
        out.append(f"  ... and {len(failing) - top} more failing rule(s) (--top N)")
    erroring = [r for r in g.rules if r.erroring]
    if erroring:
        out.append(f"Not evaluated ({len(erroring)} rule(s)):")
        out += [f"  {_one(r.rule_id)}  {len(r.erroring)} node(s)  {hostlist(r.erroring)}"
                for r in erroring[:top]]
    if not failing and not erroring:
        out.append("No rule fails or errs on any node.")
    return out


def _drift_section(fleet: Fleet, top: int) -> list[str]:
    """Values that differ between nodes (outliers, or no majority)."""
    drift = [d for d in fleet.drift if d.outliers or d.majority is None]
    if not drift:
        return []
    out = ["", f"Drift: {len(drift)} value(s) differ between nodes (outliers pass or "
               f"fail on their own):"]
    for d in drift[:top]:
        out += _drift_lines(d)
    if len(drift) > top:
        out.append(f"  ... and {len(drift) - top} more (see --format json)")
    return out


def _identity_lines(fleet: Fleet) -> list[str]:
    """Machine ids shared by several hosts, host names reported with several ids."""
    if not fleet.identity:
        return []
    out = ["", "Identity:"]
    for f in fleet.identity:
        if f.kind == "duplicate-machine-id":
            out.append(f"  {f.severity.upper()} machine id {_one(f.key)} is shared by "
                       f"{len(f.hosts)} hosts: {hostlist(f.hosts)} (image cloned "
                       f"without resetting /etc/machine-id?)")
        else:
            out.append(f"  {f.severity.upper()} host name {_one(f.key)} reported with "
                       f"{len(f.machine_ids)} machine ids: "
                       f"{', '.join(map(_one, f.machine_ids))}")
    return out


def _since_lines(fleet: Fleet, top: int) -> list[str]:
    """What changed since a previous fleet report (``--since``)."""
    s = fleet.since
    if s is None:
        return []
    worse = [c for c in s.changes if c.worse]
    better = [c for c in s.changes if c.better]
    out = ["", f"Since {_one(s.origin)}: {len(worse)} node(s) worse, {len(better)} "
               f"better, {len(s.new_hosts)} new, {len(s.gone_hosts)} gone"]
    out += [f"  worse  {_one(c.host)}: now fails {', '.join(c.worse)}" for c in worse[:top]]
    out += [f"  better {_one(c.host)}: fixed {', '.join(c.better)}" for c in better[:top]]
    if s.new_hosts:
        out.append(f"  new    {hostlist(s.new_hosts)}")
    if s.gone_hosts:
        out.append(f"  gone   {hostlist(s.gone_hosts)}")
    return out
