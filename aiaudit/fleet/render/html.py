"""The fleet as one self-contained HTML page: a rule-by-node matrix per group and the
drift tables.  No script, no external resource (it opens from a mail attachment or an
air-gapped share); every string from a report is escaped.

The matrix has one column per set of nodes with the same status for every rule (a fleet of
10,000 mostly identical nodes is a handful of columns, each headed by its host list), at
most :data:`MAX_COLUMNS` of them, the largest first.
"""

from __future__ import annotations

from html import escape

from aiaudit import __version__
from aiaudit.core.errors import ExitCode
from aiaudit.core.escape import text_safe
from aiaudit.fleet.gate import exit_code, failing_nodes
from aiaudit.fleet.model import Drift, Fleet, GroupView
from aiaudit.fleet.render.text import hostlist

MAX_COLUMNS = 60
MAX_ROWS = 500
"""Drift rows per table; the JSON report has them all."""
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
    return escape(text_safe(value), quote=True)


def _matrix(g: GroupView) -> list[str]:
    cols = g.columns[:MAX_COLUMNS]
    out = [f"<h2>{_e(g.group.label)}: {len(g.hosts)} node(s)</h2>",
           f"<p><code>{_e(hostlist(g.hosts))}</code></p>",
           "<table class=matrix><thead><tr><th>rule</th><th>severity</th>"
           "<th>fail</th>"]
    out += [f'<th class=col title="{_e(hostlist(c.hosts, 2000))}">{len(c.hosts)}: '
            f"{_e(hostlist(c.hosts, 60))}</th>" for c in cols]
    out.append("</tr></thead><tbody>")
    for i, r in enumerate(g.rules):
        cells = "".join(f'<td class="s {_e(c.statuses[i])}" title="{_e(c.statuses[i])}">'
                        f"{_SYMBOL.get(c.statuses[i], '?')}</td>" for c in cols)
        out.append(f'<tr><td title="{_e(r.title)}"><code>{_e(r.rule_id)}</code></td>'
                   f'<td class="sev-{_e(r.severity)}">{_e(r.severity)}</td>'
                   f"<td>{len(r.failing)}</td>{cells}</tr>")
    out.append("</tbody></table>")
    if len(g.columns) > MAX_COLUMNS:
        rest = sum(len(c.hosts) for c in g.columns[MAX_COLUMNS:])
        out.append(f"<p class=muted>{len(g.columns) - MAX_COLUMNS} more node sets "
                   f"({rest} nodes) not shown; see the JSON report.</p>")
    failing = [r for r in g.rules if r.failing or r.erroring]
    if failing:
        out.append("<table><thead><tr><th>rule</th><th>failing nodes</th>"
                   "<th>not evaluated</th></tr></thead><tbody>")
        out += [f"<tr><td><code>{_e(r.rule_id)}</code></td><td><code>"
                f"{_e(hostlist(r.failing, 2000))}</code></td><td><code>"
                f"{_e(hostlist(r.erroring, 2000))}</code></td></tr>" for r in failing]
        out.append("</tbody></table>")
    return out


def _drift_table(title: str, drifts: tuple[Drift, ...]) -> list[str]:
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
                       f"<td>{len(v.hosts)}</td><td><code>{_e(hostlist(v.hosts, 2000))}"
                       f"</code></td></tr>")
    out.append("</tbody></table>")
    if len(drifts) > MAX_ROWS:
        out.append(f"<p class=muted>{len(drifts) - MAX_ROWS} more; see the JSON report.</p>")
    return out


def render(fleet: Fleet, fail_on: str, max_failing: int) -> str:
    """The HTML page."""
    code = exit_code(fleet, fail_on, max_failing)
    verdict = {ExitCode.OK: "pass", ExitCode.FAILED: "fail",
               ExitCode.NOT_EVALUATED: "not evaluated",
               ExitCode.BAD_INPUT: "incomplete input"}.get(code, "")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width">',
           f"<title>aiaudit fleet: {fleet.nodes} nodes</title><style>{_CSS}</style></head>",
           "<body>", f"<h1>aiaudit fleet: {fleet.nodes} node(s), {fleet.reports} report(s)"
                     "</h1>",
           f"<p class=verdict>gate --fail-on {_e(fail_on)}, --max-failing-nodes "
           f"{max_failing}: {_e(verdict)} (exit {int(code)}); "
           f"{len(failing_nodes(fleet, fail_on))} node(s) fail a rule at or above "
           f"{_e(fail_on)}.</p>",
           "<p class=muted>Cells: ✓ pass, ✗ fail, ! not evaluated, · not applicable, "
           "w waived; a column is every node with the same statuses.</p>"]
    for g in fleet.groups:
        out += _matrix(g)
    out += _drift_table("Drift: values that differ between nodes", fleet.drift)
    out += _drift_table("Host facts that differ", fleet.facts)
    if fleet.identity:
        out += ["<h2>Identity</h2><table><thead><tr><th>finding</th><th>severity</th>"
                "<th>shared</th><th>hosts</th><th>machine ids</th></tr></thead><tbody>"]
        out += [f"<tr><td>{_e(f.kind)}</td><td>{_e(f.severity)}</td><td><code>{_e(f.key)}"
                f"</code></td><td><code>{_e(hostlist(f.hosts, 2000))}</code></td><td><code>"
                f"{_e(', '.join(f.machine_ids))}</code></td></tr>" for f in fleet.identity]
        out.append("</tbody></table>")
    if fleet.since is not None:
        s = fleet.since
        out += [f"<h2>Since {_e(s.origin)}</h2><table><thead><tr><th>node</th>"
                "<th>now fails</th><th>fixed</th></tr></thead><tbody>"]
        out += [f"<tr><td><code>{_e(c.host)}</code></td><td>{_e(', '.join(c.worse))}</td>"
                f"<td>{_e(', '.join(c.better))}</td></tr>" for c in s.changes]
        out.append("</tbody></table>")
        out.append(f"<p>new: <code>{_e(hostlist(s.new_hosts, 2000))}</code>; gone: <code>"
                   f"{_e(hostlist(s.gone_hosts, 2000))}</code></p>")
    if fleet.problems:
        out += ["<h2>Unusable input</h2><ul>"]
        out += [f"<li><code>{_e(p)}</code></li>" for p in fleet.problems]
        out.append("</ul>")
    if fleet.notices:
        out += ["<h2>Notices</h2><ul>"]
        out += [f"<li>{_e(n)}</li>" for n in fleet.notices[:MAX_ROWS]]
        out.append("</ul>")
    out += [f"<p class=muted>aiaudit {_e(__version__)}</p>", "</body></html>"]
    return "\n".join(out) + "\n"
