"""The fleet as one self-contained HTML page: a rule-by-node matrix per group and the
drift tables.  No script, no external resource (it opens from a mail attachment or an
air-gapped share), and a Content-Security-Policy that forbids both, so a string that slips
through escaping still runs nothing.  Every string from a report goes through
:func:`aiaudit.core.escape.html_safe`, as in the scan's HTML report: control characters,
C1 controls and bidi overrides are shown as ``\\xNN``/``\\uNNNN``, then HTML-escaped.

The matrix has one column per set of nodes with the same status for every rule (a fleet of
10,000 mostly identical nodes is a handful of columns, each headed by its host list), at
most :data:`MAX_COLUMNS` of them, the largest first.
"""

from __future__ import annotations

from aiaudit import __version__
from aiaudit.core.errors import ExitCode
from aiaudit.core.escape import html_safe
from aiaudit.fleet.gate import exit_code, failing_nodes
from aiaudit.fleet.identity import describe
from aiaudit.fleet.model import Drift, Fleet, GroupView
from aiaudit.fleet.render.text import hostlist, nodelist

MAX_COLUMNS = 60
MAX_ROWS = 500
"""Rows per table (rules of a matrix, drift rows, notices); the JSON report has them all."""
CSP = "default-src 'none'; style-src 'unsafe-inline'"
"""No script, image, font, frame or connection of any origin; only the inline style."""
_SYMBOL = {"pass": "✓", "fail": "✗", "error": "!", "skip": "·", "waived": "w", "": ""}

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top;text-align:left}
th.col{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;
 max-height:14em;overflow:hidden;white-space:nowrap}
td.s{text-align:center;min-width:1.4em}
.fail{background:#f4b6b6}.error{background:#f7dc9c}.pass{background:#c8e6c9}
.skip{background:#eee;color:#888}.waived{background:#d7d0ef}
.sev-critical,.sev-high{font-weight:bold}
code{font-family:ui-monospace,monospace;word-break:break-all}
.verdict{font-weight:bold}.muted{color:#777}
"""


def _e(value: object) -> str:
    return html_safe(value)


def _matrix(fleet: Fleet, g: GroupView) -> list[str]:
    cols = g.columns[:MAX_COLUMNS]
    out = [f"<h2>{_e(g.group.label)}: {len(g.nodes)} node(s)</h2>",
           f"<p><code>{_e(nodelist(fleet, g.nodes))}</code></p>",
           f"<p class=muted>severities: {_e(g.judged_by)}</p>" if g.judged_by else "",
           "<table class=matrix><thead><tr><th>rule</th><th>severity</th>"
           "<th>fail</th>"]
    out += [f'<th class=col title="{_e(nodelist(fleet, c.nodes, 2000))}">{len(c.nodes)}: '
            f"{_e(nodelist(fleet, c.nodes, 60))}</th>" for c in cols]
    out.append("</tr></thead><tbody>")
    for i, r in enumerate(g.rules[:MAX_ROWS]):
        cells = "".join(f'<td class="s {_e(c.statuses[i])}" title="{_e(c.statuses[i])}">'
                        f"{_SYMBOL.get(c.statuses[i], '?')}</td>" for c in cols)
        out.append(f'<tr><td title="{_e(r.title)}"><code>{_e(r.rule_id)}</code></td>'
                   f'<td class="sev-{_e(r.severity)}">{_e(r.severity)}</td>'
                   f"<td>{len(r.failing)}</td>{cells}</tr>")
    out.append("</tbody></table>")
    if len(g.rules) > MAX_ROWS:
        out.append(f"<p class=muted>{len(g.rules) - MAX_ROWS} more rules; see the JSON "
                   f"report.</p>")
    if len(g.columns) > MAX_COLUMNS:
        rest = sum(len(c.nodes) for c in g.columns[MAX_COLUMNS:])
        out.append(f"<p class=muted>{len(g.columns) - MAX_COLUMNS} more node sets "
                   f"({rest} nodes) not shown; see the JSON report.</p>")
    failing = [r for r in g.rules if r.failing or r.erroring][:MAX_ROWS]
    if failing:
        out.append("<table><thead><tr><th>rule</th><th>failing nodes</th>"
                   "<th>not evaluated</th></tr></thead><tbody>")
        out += [f"<tr><td><code>{_e(r.rule_id)}</code></td><td>{len(r.failing)}: <code>"
                f"{_e(nodelist(fleet, r.failing, 2000))}</code></td><td>{len(r.erroring)}: "
                f"<code>{_e(nodelist(fleet, r.erroring, 2000))}</code></td></tr>"
                for r in failing]
        out.append("</tbody></table>")
    return out


def _drift_table(fleet: Fleet, title: str, drifts: tuple[Drift, ...]) -> list[str]:
    if not drifts:
        return []
    out = [f"<h2>{_e(title)} ({len(drifts)})</h2>",
           "<table><thead><tr><th>group</th><th>rule</th><th>subject</th><th>value</th>"
           "<th>nodes</th><th>hosts</th></tr></thead><tbody>"]
    for d in drifts[:MAX_ROWS]:
        span = len(d.values)
        for i, v in enumerate(d.values):
            head = (f"<td rowspan={span}>{_e(d.group)}</td><td rowspan={span}><code>"
                    f"{_e(d.rule_id)}</code></td><td rowspan={span}><code>{_e(d.subject)}"
                    f"</code></td>") if i == 0 else ""
            cls = "" if v.value == d.majority else ' class="fail"' if d.majority else ""
            out.append(f"<tr>{head}<td{cls}><code>{_e(v.value)}</code></td>"
                       f"<td>{len(v.nodes)}</td><td><code>"
                       f"{_e(nodelist(fleet, v.nodes, 2000))}</code></td></tr>")
    out.append("</tbody></table>")
    if len(drifts) > MAX_ROWS:
        out.append(f"<p class=muted>{len(drifts) - MAX_ROWS} more; see the JSON report.</p>")
    return out


def _identity(fleet: Fleet) -> list[str]:
    if not fleet.identity and not fleet.conflicts:
        return []
    out = ["<h2>Identity</h2><table><thead><tr><th>finding</th><th>severity</th>"
           "<th>nodes</th><th>hosts</th><th>what</th></tr></thead><tbody>"]
    out += [f"<tr><td>{_e(f.kind)}</td><td>{_e(f.severity)}</td><td>{len(f.nodes)}</td>"
            f"<td><code>{_e(nodelist(fleet, f.nodes, 2000))}</code></td>"
            f"<td>{_e(describe(f))}</td></tr>" for f in fleet.identity[:MAX_ROWS]]
    for c in fleet.conflicts[:MAX_ROWS]:
        node = fleet.nodes[c.node]
        reports = "; ".join(f"{r.origin} (host {r.hostname}, started {r.started})"
                            for r in c.reports)
        out.append(f"<tr><td>conflicting-reports</td><td></td><td>1</td><td><code>"
                   f"{_e(node.hostname)}</code></td><td>{len(c.reports)} reports claim this "
                   f"node: {_e(reports)}; it counts the worst of them</td></tr>")
    out.append("</tbody></table>")
    return out


def render(fleet: Fleet, fail_on: str, max_failing: int) -> str:
    """The HTML page."""
    code = exit_code(fleet, fail_on, max_failing)
    verdict = {ExitCode.OK: "pass", ExitCode.FAILED: "fail",
               ExitCode.NOT_EVALUATED: "not evaluated",
               ExitCode.BAD_INPUT: "incomplete input"}.get(code, "")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           '<meta name="viewport" content="width=device-width">',
           f"<title>aiaudit fleet: {fleet.node_count} nodes</title><style>{_CSS}</style>"
           "</head>", "<body>",
           f"<h1>aiaudit fleet: {fleet.node_count} node(s), {fleet.reports} report(s)</h1>",
           f"<p class=verdict>gate --fail-on {_e(fail_on)}, --max-failing-nodes "
           f"{max_failing}: {_e(verdict)} (exit {int(code)}); "
           f"{len(failing_nodes(fleet, fail_on))} node(s) fail a rule at or above "
           f"{_e(fail_on)}.</p>",
           "<p class=muted>Cells: ✓ pass, ✗ fail, ! not evaluated, · not applicable, "
           "w waived; a column is every node with the same statuses.</p>"]
    for g in fleet.groups:
        out += _matrix(fleet, g)
    out += _drift_table(fleet, "Drift: values that differ between nodes", fleet.drift)
    out += _drift_table(fleet, "Host facts that differ", fleet.facts)
    out += _identity(fleet)
    if fleet.since is not None:
        s = fleet.since
        out += [f"<h2>Since {_e(s.origin)}</h2><table><thead><tr><th>node</th>"
                "<th>now fails</th><th>fixed</th></tr></thead><tbody>"]
        out += [f"<tr><td><code>{_e(c.host)}</code></td><td>{_e(', '.join(c.worse))}</td>"
                f"<td>{_e(', '.join(c.better))}</td></tr>" for c in s.changes[:MAX_ROWS]]
        out.append("</tbody></table>")
        out.append(f"<p>new: <code>{_e(hostlist(s.new_hosts, 2000))}</code>; gone: <code>"
                   f"{_e(hostlist(s.gone_hosts, 2000))}</code></p>")
    if fleet.problem_count:
        out += [f"<h2>Input problems ({fleet.problem_count})</h2><ul>"]
        out += [f"<li><code>{_e(p)}</code></li>" for p in fleet.problems[:MAX_ROWS]]
        out.append("</ul>")
    if fleet.notices:
        out += ["<h2>Notices</h2><ul>"]
        out += [f"<li>{_e(n)}</li>" for n in fleet.notices[:MAX_ROWS]]
        out.append("</ul>")
    out += [f"<p class=muted>aiaudit {_e(__version__)}</p>", "</body></html>"]
    return "\n".join(x for x in out if x) + "\n"
