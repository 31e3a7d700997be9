"""The fleet for a terminal: summary, top failing rules with their host lists, outliers,
host facts, identity findings, conflicts, changes since a previous report.

Every string from a report (rule titles, values, subjects, group labels, problem lines) goes
through :func:`aiaudit.core.escape.human_safe`, as in the scan's text report: ESC, BEL, CR,
C1 controls (U+009B is an 8-bit CSI), bidi overrides (U+202E) and lone surrogates are shown
as ``\\xNN``/``\\uNNNN``, never passed to the terminal.  Counts are node counts
(:mod:`aiaudit.fleet.model`); host lists are the nodes' names, folded."""

from __future__ import annotations

from typing import Iterable

from aiaudit.core.errors import ExitCode
from aiaudit.core.escape import human_safe
from aiaudit.fleet.extract import SEVERITIES
from aiaudit.fleet.gate import exit_code, failing_nodes, over_threshold
from aiaudit.fleet.hostlist import fold
from aiaudit.fleet.identity import describe
from aiaudit.fleet.model import Drift, Fleet, GroupView

MAX_LIST = 300
"""Characters of a host list shown on one line (the JSON report has them all)."""
_VERDICT = {ExitCode.OK: "PASS", ExitCode.FAILED: "FAIL",
            ExitCode.NOT_EVALUATED: "NOT EVALUATED", ExitCode.BAD_INPUT: "INCOMPLETE INPUT"}


def one(text: object) -> str:
    """One line: whitespace runs become one space, control characters are escaped."""
    return human_safe(" ".join(str(text).split()))


def hostlist(hosts: Iterable[str], limit: int = MAX_LIST, count: int | None = None) -> str:
    """A folded host list of these names, shortened to ``limit`` characters with the
    number of nodes (``count``, default the number of distinct names)."""
    names = list(hosts)
    text = fold(names)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(",", 1)[0]
    return f"{cut},... ({count if count is not None else len(set(names))} nodes)"


def nodelist(fleet: Fleet, nodes: Iterable[int], limit: int = MAX_LIST) -> str:
    """The host list of these nodes."""
    ids = list(nodes)
    return hostlist(fleet.names(ids), limit, len(ids))


def _drift_lines(fleet: Fleet, d: Drift) -> list[str]:
    name = d.subject if d.rule_id == "host" else f"{d.rule_id} {d.subject}".rstrip()
    total = sum(len(v.nodes) for v in d.values)
    if d.majority is not None:
        top = d.values[0]
        lines = [f"  {one(name)}: {one(top.value)} on {len(top.nodes)}/{total} nodes; "
                 f"{len(d.outliers)} outlier(s):"]
        lines += [f"      {one(v.value)}: {nodelist(fleet, v.nodes)}" for v in d.values[1:]]
    else:
        lines = [f"  {one(name)}: no majority among {total} nodes:"]
        lines += [f"      {one(v.value)}: {nodelist(fleet, v.nodes)}" for v in d.values]
    return lines


def render(fleet: Fleet, fail_on: str, max_failing: int, *, top: int = 20) -> str:
    """The text report."""
    code = exit_code(fleet, fail_on, max_failing)
    gate = over_threshold(fleet, fail_on, max_failing)
    bad = failing_nodes(fleet, fail_on)
    out = [f"aiaudit fleet: {fleet.node_count} node(s) from {fleet.reports} report(s) in "
           f"{len(fleet.groups)} group(s)"
           + (f"; {fleet.problem_count} input problem(s)" if fleet.problem_count else ""),
           f"gate: --fail-on {fail_on}, --max-failing-nodes {max_failing}: "
           f"{_VERDICT.get(code, str(code))}; {len(bad)} node(s) fail a rule at or above "
           f"{fail_on}"]
    if gate:
        more = f", and {len(gate) - top} more" if len(gate) > top else ""
        out.append("  beyond the threshold: "
                   + ", ".join(f"{one(r)} ({n} nodes)" for r, n in gate[:top]) + more)
    for g in fleet.groups:
        out += _group_lines(fleet, g, top)
    out += _drift_section(fleet, top)
    if fleet.facts:
        out += ["", "Host facts that differ:"]
        for d in fleet.facts:
            out += _drift_lines(fleet, d)
    out += _identity_lines(fleet, top)
    out += _since_lines(fleet, top)
    if fleet.notices:
        out += ["", f"Notices ({len(fleet.notices)}):"]
        out += [f"  {one(n)}" for n in fleet.notices[:top]]
        if len(fleet.notices) > top:
            out.append(f"  ... and {len(fleet.notices) - top} more")
    if fleet.problem_count:
        out += ["", f"Input problems ({fleet.problem_count}; also on stderr):"]
        out += [f"  {one(p)}" for p in fleet.problems[:top]]
        if fleet.problem_count > top:
            out.append(f"  ... and {fleet.problem_count - top} more")
    return "\n".join(out) + "\n"


def _group_lines(fleet: Fleet, g: GroupView, top: int) -> list[str]:
    """One group of nodes: its failing rules, worst first, and the rules not evaluated."""
    out = ["", f"== {one(g.group.label)}: {len(g.nodes)} node(s) {nodelist(fleet, g.nodes)}"]
    if g.judged_by:
        out.append(f"severities: {one(g.judged_by)}")
    failing = sorted((r for r in g.rules if r.failing),
                     key=lambda r: (-SEVERITIES.index(r.severity), -len(r.failing), r.rule_id))
    if failing:
        out.append(f"Failing rules ({len(failing)}), worst first:")
    for r in failing[:top]:
        out.append(f"  {r.severity.upper():<8} {one(r.rule_id)}  {len(r.failing)}/"
                   f"{len(g.nodes)} fail  {nodelist(fleet, r.failing)}")
        if r.title:
            out.append(f"           {one(r.title)}")
    if len(failing) > top:
        out.append(f"  ... and {len(failing) - top} more failing rule(s) (--top N)")
    erroring = [r for r in g.rules if r.erroring]
    if erroring:
        out.append(f"Not evaluated ({len(erroring)} rule(s)):")
        out += [f"  {one(r.rule_id)}  {len(r.erroring)} node(s)  "
                f"{nodelist(fleet, r.erroring)}" for r in erroring[:top]]
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
        out += _drift_lines(fleet, d)
    if len(drift) > top:
        out.append(f"  ... and {len(drift) - top} more (see --format json)")
    return out


def _identity_lines(fleet: Fleet, top: int) -> list[str]:
    """Ids and names shared by distinct nodes; nodes claimed by several reports."""
    if not fleet.identity and not fleet.conflicts:
        return []
    out = ["", "Identity:"]
    for f in fleet.identity[:top]:
        out.append(f"  {f.severity.upper()} {one(describe(f))}: "
                   f"{nodelist(fleet, f.nodes)}")
    if len(fleet.identity) > top:
        out.append(f"  ... and {len(fleet.identity) - top} more (see --format json)")
    for c in fleet.conflicts[:top]:
        node = fleet.nodes[c.node]
        names = f" under host names {', '.join(node.hostnames)}" if len(node.hostnames) > 1 \
            else ""
        out.append(f"  CONFLICT {one(node.hostname)}: {len(c.reports)} reports claim one "
                   f"node{names}: " + "; ".join(f"{one(r.origin)} ({one(r.started)})"
                                               for r in c.reports[:3])
                   + ("; ..." if len(c.reports) > 3 else "")
                   + " (the node counts the worst of them)")
    if len(fleet.conflicts) > top:
        out.append(f"  ... and {len(fleet.conflicts) - top} more conflicts")
    return out


def _since_lines(fleet: Fleet, top: int) -> list[str]:
    """What changed since a previous fleet report (``--since``)."""
    s = fleet.since
    if s is None:
        return []
    worse = [c for c in s.changes if c.worse]
    better = [c for c in s.changes if c.better]
    out = ["", f"Since {one(s.origin)}: {len(worse)} node(s) worse, {len(better)} "
               f"better, {len(s.new_hosts)} new, {len(s.gone_hosts)} gone"]
    out += [f"  worse  {one(c.host)}: now fails {one(', '.join(c.worse))}"
            for c in worse[:top]]
    out += [f"  better {one(c.host)}: fixed {one(', '.join(c.better))}"
            for c in better[:top]]
    if s.new_hosts:
        out.append(f"  new    {hostlist(s.new_hosts)}")
    if s.gone_hosts:
        out.append(f"  gone   {hostlist(s.gone_hosts)}")
    return out
