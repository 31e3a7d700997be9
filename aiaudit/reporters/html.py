"""``html`` reporter: one self-contained page a person reads in a browser or a CI artifact.

No external script, font, style sheet or image: everything is inline, so the file works
offline and from an artifact store that serves it as a download.  The page holds:

- a header with the host's identity, the scan, the counts by status and severity and what
  the exit code means;
- "Fix first": the failures grouped by the fix that addresses them (the grouping of the text
  report, :func:`aiaudit.reporters._common.fix_groups`), worst first, each with its commands;
- the results by area (sysctl, SSH, firewall, GPU...), a table per area with a row per
  result; a failure row opens to its message, expected and actual value, evidence and fix.

Filters by status and severity are checkboxes handled by a few lines of inline script; their
state lives in the URL fragment (``#status=fail,error&severity=high,critical``), so a link
can point at a filtered view, and a filtered-out row carries the ``hidden`` attribute.  By
default failures, errors and waived failures are shown; passed and not-applicable results are
one click away, which keeps a report of 500 results readable.  Without script every row is
shown.

Every value from the host or a saved report is escaped twice: control characters become
visible ``\\xNN`` (:func:`~aiaudit.reporters._common.human_safe`), then HTML-escaped.
"""

from __future__ import annotations

from typing import Any, Mapping

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.core.escape import html_safe
from aiaudit.core.model import DEFAULT_FILE_MODE, Finding, Severity, Status, sorted_findings
from aiaudit.remediate.grouping import FixGroup, changes_nothing, fix_groups, heredoc
from aiaudit.reporters._common import (
    evidence_text,
    no_user_skips,
    plain_expected,
    plural,
    safe_id,
    verdict,
    whole_scan_counts,
)

STATUS_ORDER = (Status.FAIL, Status.ERROR, Status.WAIVED, Status.SKIP, Status.PASS)
STATUS_LABEL = {Status.FAIL: "fail", Status.ERROR: "error", Status.WAIVED: "waived",
                Status.SKIP: "not applicable", Status.PASS: "pass"}
OPEN_FIXES = 3
"""Fix-first entries whose steps and commands are shown unfolded."""
DEFAULT_SHOWN = ("fail", "error", "waived")
"""Statuses shown when the URL fragment names none."""

AREAS = {
    "kernel": "Kernel settings (sysctl)", "block": "Disks", "cpu": "CPU",
    "memory": "Memory", "limits": "Training-user limits", "user": "Training-user limits",
    "slurm": "Slurm", "ssh": "SSH", "network": "Network exposure",
    "firewall": "Firewall", "gpu": "GPU software stack",
}
"""First part of a check id -> the area heading its results appear under."""

CSS = """
:root{--fail:#b3261e;--error:#8e24aa;--waived:#a36b00;--skip:#6b6b6b;--pass:#1e7d32;
--bg:#fff;--fg:#1b1b1b;--muted:#5f6368;--line:#e0e0e0;--code:#f5f5f5}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--fg);background:var(--bg)}
header,main,footer{max-width:1200px;margin:0 auto;padding:12px 20px}
header{border-bottom:1px solid var(--line)}
h1{font-size:20px;margin:4px 0}h2{font-size:17px;margin:22px 0 8px}
h3{font-size:15px;margin:0}
.muted{color:var(--muted)}
dl.id{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0}
dl.id dt{color:var(--muted)}dl.id dd{margin:0;word-break:break-all}
.counts{display:flex;flex-wrap:wrap;gap:8px;margin:10px 0}
.count{border:1px solid var(--line);border-radius:6px;padding:4px 10px}
.count b{font-size:18px}
.verdict{font-weight:600;margin:6px 0}
.v1{color:var(--fail)}.v3{color:var(--error)}.v0{color:var(--pass)}
.note{background:#fff8e1;border-left:4px solid var(--waived);padding:6px 10px;margin:8px 0}
.badge{display:inline-block;min-width:4.5em;text-align:center;border-radius:4px;
padding:0 6px;font-size:12px;font-weight:600;color:#fff}
.s-fail{background:var(--fail)}.s-error{background:var(--error)}
.s-waived{background:var(--waived)}.s-skip{background:var(--skip)}.s-pass{background:var(--pass)}
.sev{font-size:12px;font-weight:600;text-transform:uppercase}
.sev-critical{color:#fff;background:var(--fail);border-radius:3px;padding:0 4px}
.sev-high{color:var(--fail)}.sev-medium{color:var(--waived)}.sev-low{color:#00796b}
.sev-info{color:var(--muted)}
ol.fixes>li{margin:0 0 10px}
.fixes .ids{color:var(--muted);font-size:13px}
pre{background:var(--code);border:1px solid var(--line);border-radius:4px;padding:8px;
overflow:auto;white-space:pre;margin:6px 0;font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace}
code{font-family:ui-monospace,Menlo,Consolas,monospace}
form.filters{position:sticky;top:0;background:var(--bg);border-bottom:1px solid var(--line);
padding:8px 0;z-index:1;display:flex;flex-wrap:wrap;gap:4px 18px}
form.filters fieldset{border:0;margin:0;padding:0}
form.filters legend{float:left;margin-right:6px;color:var(--muted)}
form.filters label{margin-right:8px;white-space:nowrap}
section.area{margin:14px 0}
section.area>details>summary{cursor:pointer;padding:4px 0}
table{border-collapse:collapse;width:100%;table-layout:fixed}
td,th{border-top:1px solid var(--line);padding:4px 6px;vertical-align:top;text-align:left}
th{font-weight:600;color:var(--muted);font-size:12px}
col.c-st{width:7.5em}col.c-sev{width:6.5em}col.c-id{width:19em}col.c-subj{width:14em}
td{overflow-wrap:anywhere}
tr.detail td{border-top:0;padding-top:0}
.detail dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:2px 0 6px}
.detail dt{color:var(--muted)}.detail dd{margin:0}
.empty{color:var(--muted);font-style:italic}
@media print{form.filters{display:none}tr[hidden]{display:none}}
"""

SCRIPT = """
(function(){
var form=document.getElementById('filters');
function sel(name){var v=[];form.querySelectorAll('input[name='+name+']').forEach(
function(i){if(i.checked)v.push(i.value);});return v;}
function parse(){var out={};location.hash.replace(/^#/,'').split('&').forEach(function(kv){
var p=kv.split('=');if(p[0]&&p.length==2)out[decodeURIComponent(p[0])]=
decodeURIComponent(p[1]).split(',').filter(Boolean);});return out;}
function set(state){['status','severity'].forEach(function(n){var want=state[n];
form.querySelectorAll('input[name='+n+']').forEach(function(i){
i.checked=want?want.indexOf(i.value)>=0:(n=='severity'||i.dataset.def=='1');});});}
function apply(){var st=sel('status'),sv=sel('severity'),shown={};
document.querySelectorAll('tr.result').forEach(function(r){
var on=st.indexOf(r.dataset.status)>=0&&sv.indexOf(r.dataset.severity)>=0;
r.hidden=!on;var d=document.getElementById(r.id+'-d');if(d)d.hidden=!on;
var a=r.dataset.area;shown[a]=(shown[a]||0)+(on?1:0);});
document.querySelectorAll('section.area').forEach(function(s){
var n=shown[s.dataset.area]||0;s.querySelector('.nshown').textContent=n;
s.querySelector('.empty').hidden=n>0;});
document.body.dataset.filter='status='+st.join(',')+'&severity='+sv.join(',');}
function save(){history.replaceState(null,'','#status='+sel('status').join(',')+
'&severity='+sel('severity').join(','));}
set(parse());apply();
form.addEventListener('change',function(){apply();save();});
window.addEventListener('hashchange',function(){set(parse());apply();});
})();
"""


def _e(value: object) -> str:
    return html_safe(value)


def _eb(value: object) -> str:
    return html_safe(value, block=True)


def _area(check: str) -> str:
    return check.split(".", 1)[0]


def _sev(s: Severity) -> str:
    return f'<span class="sev sev-{s.value}">{s.value}</span>'


def _badge(s: Status) -> str:
    return f'<span class="badge s-{s.value}">{STATUS_LABEL[s]}</span>'


KIND_LABEL = {"bootable": "bootable host", "stateless": "stateless image",
              "container": "container image"}
"""How the header names :attr:`~aiaudit.core.model.HostInfo.image_kind`."""


def _header(run: RunResult, out: list[str]) -> None:
    h = run.host
    out.append(f"<header><h1>aiaudit report: {_e(h.hostname)}</h1>")
    rows = [
        ("host", h.hostname), ("image", h.image_id),
        ("kind", f"{KIND_LABEL.get(h.image_kind, h.image_kind)}" + (
            f" ({h.image_kind_reason})" if h.image_kind_reason else "")
         if h.image_kind else None),
        ("os", h.os_name), ("kernel", h.kernel),
        ("machine id", h.machine_id), ("product uuid", h.product_uuid),
        ("scan", f"{h.mode}, root {h.root}" + ("" if h.root == "/" else
                                               " (paths are as on the scanned system)")),
        ("ruleset", f"{run.ruleset} {run.ruleset_version}"),
        ("started", f"{run.started}, took {run.duration_s:.2f}s"),
        ("training user", (f"{run.training_user}" + (f" (from {run.training_user_source})"
                                                     if run.training_user_source else ""))
         if run.training_user else None),
        ("tool", f"aiaudit {run.tool_version}, run {run.run_id}"),
    ]
    out.append('<dl class="id">')
    for k, v in rows:
        if v:
            out.append(f"<dt>{k}</dt><dd>{_e(v)}</dd>")
    out.append("</dl>")
    whole = whole_scan_counts(run)
    status = {s.value: sum(int(whole.get(sev.value, {}).get(s.value, 0)) for sev in Severity)
              for s in Status}
    out.append('<div class="counts" id="counts">')
    for s in STATUS_ORDER:
        out.append(f'<span class="count" data-status="{s.value}"><b>{status[s.value]}</b> '
                   f"{STATUS_LABEL[s]}</span>")
    failed = [(sev, int(whole.get(sev.value, {}).get("fail", 0))) for sev in reversed(Severity)]
    sev_txt = ", ".join(f"{n} {sev.value}" for sev, n in failed if n)
    if sev_txt:
        out.append(f'<span class="count">failures: {sev_txt}</span>')
    out.append("</div>")
    code, text = verdict(run)
    text = text.replace("the fixes above", "the fixes below")
    out.append(f'<p class="verdict v{code}" id="verdict">{_e(text)}</p>')
    if run.scan_counts is not None:
        out.append(f'<p class="note">Only the {len(run.findings)} results that changed since '
                   "the previous scan are listed; the counts above are of the whole scan and "
                   "decide the exit code.</p>")
    no_user = no_user_skips(run)
    if no_user:
        ids = ", ".join(dict.fromkeys(f.rule_id for f in no_user))
        out.append(f'<p class="note" id="no-user">{len(no_user)} rules about the training '
                   f"user's limits were not evaluated because no training user is known "
                   f"({_e(ids)}). Name one with <code>--user NAME</code> (or run under sudo "
                   "or a Slurm job, or set <code>settings.user</code> in the ruleset).</p>")
    for n in run.notices:
        out.append(f'<p class="note">{_e(n)}</p>')
    out.append("</header>")


def _fix_shell(g: FixGroup) -> str:
    shell = [heredoc(p, lines, g.modes.get(p, DEFAULT_FILE_MODE))
             for p, lines in g.files.items()]
    shell += g.commands + [f"systemctl enable {u}" for u in g.enable]
    return "\n".join(shell)


def _fix_first(groups: list[FixGroup], ids: dict[int, str], out: list[str]) -> None:
    nfail = sum(len(g.findings) for g in groups)
    out.append(f'<section id="fix-first"><h2>Fix first: {plural(len(groups), "fix")} for '
               f"{plural(nfail, 'failure')}, worst first</h2><ol class=\"fixes\">")
    for n, g in enumerate(groups, 1):
        links = []
        for rid in g.rule_ids:
            targets = [ids[id(f)] for f in g.findings if f.rule_id == rid]
            k = len(targets)
            links.append(f'<a href="#{targets[0]}">{_e(rid)}</a>'
                         + (f" ({k} results)" if k > 1 else ""))
        out.append(f'<li id="fix-{n}">{_sev(g.severity)} <b>{len(g.findings)}</b> &times; '
                   f"{_e(' '.join([g.summary, *g.also]))}"
                   f'<div class="ids">fixes {", ".join(links)}</div>')
        shell = _fix_shell(g)
        # a merged fix's further changes, unless its commands make them (said once)
        body = [f"<div>Also: {_e(step)}</div>" for step in g.steps if not shell]
        body += [f"<div><b>By hand:</b> {_e(m)}</div>" for m in g.manual]
        if shell and changes_nothing(g):
            body.append("<div><b>To look first</b> (a diagnosis: it changes nothing):</div>")
        if shell:
            body.append(f"<pre>{_eb(shell)}</pre>")
        if body:
            # the first fixes open; the rest fold, so a long list stays a list
            opened = " open" if n <= OPEN_FIXES else ""
            out.append(f"<details{opened}><summary>how</summary>{''.join(body)}</details>")
        out.append("</li>")
    out.append("</ol></section>")


def _filters(out: list[str]) -> None:
    out.append('<form class="filters" id="filters" onsubmit="return false">'
               "<fieldset><legend>status</legend>")
    for s in STATUS_ORDER:
        default = "1" if s.value in DEFAULT_SHOWN else "0"
        out.append(f'<label><input type="checkbox" name="status" value="{s.value}" '
                   f'data-def="{default}" checked> {STATUS_LABEL[s]}</label>')
    out.append("</fieldset><fieldset><legend>severity</legend>")
    for sev in reversed(Severity):
        out.append(f'<label><input type="checkbox" name="severity" value="{sev.value}" '
                   f"checked> {sev.value}</label>")
    out.append("</fieldset></form>")


def _detail(f: Finding, fix_no: int | None, out: list[str]) -> None:
    r = f.result
    rows: list[tuple[str, str]] = [("message", _e(r.message))]
    expected = plain_expected(r.expected)
    if expected is not None:
        rows.append(("expected", _e(expected)))
    if r.actual is not None:
        rows.append(("actual", _e(r.actual)))
    if r.aspect is not None:
        rows.append(("aspect", _e(r.aspect.value)))
    if r.evidence:
        rows.append(("evidence", "<br>".join(f"<code>{_e(evidence_text(e))}</code>"
                                             for e in r.evidence)))
    change = r.data.get("change") if r.data else None
    if isinstance(change, dict) and "kind" in change:
        was = change.get("previous_status")
        rows.append(("change", _e(f"{change['kind']}" + (f", was {was}" if was else ""))))
    if f.waiver is not None:
        w = f.waiver
        rows.append(("waived", _e(f"{w.reason} (owner {w.owner}, expires {w.expires})")))
    if r.remediation is not None and f.status is Status.FAIL:
        link = f' (<a href="#fix-{fix_no}">fix {fix_no}</a>)' if fix_no else ""
        rows.append(("fix", _e(r.remediation.summary) + link))
    elif fix_no:
        rows.append(("fix", f'<a href="#fix-{fix_no}">fix {fix_no}</a>'))
    out.append("<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>")


def _results(run: RunResult, ids: dict[int, str], fix_of: dict[int, int],
             out: list[str]) -> None:
    by_area: dict[str, list[Finding]] = {}
    for f in sorted_findings(run):
        by_area.setdefault(_area(f.check), []).append(f)
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    out.append('<section id="results"><h2>Results by area</h2>')
    _filters(out)

    def worst(items: list[Finding]) -> tuple[int, int]:
        return (min(rank[f.status] for f in items), -max(f.severity.rank for f in items))

    for area, items in sorted(by_area.items(), key=lambda kv: (worst(kv[1]), kv[0])):
        items.sort(key=lambda f: (rank[f.status], -f.severity.rank))
        counts = {s: sum(1 for f in items if f.status is s) for s in STATUS_ORDER}
        summary = ", ".join(f"{n} {STATUS_LABEL[s]}" for s, n in counts.items() if n)
        aid = safe_id(area)
        out.append(f'<section class="area" id="area-{aid}" data-area="{_e(area)}"><details '
                   f'open><summary><h3 style="display:inline">{_e(AREAS.get(area, area))}'
                   f'</h3> <span class="muted">({summary}; <span class="nshown">'
                   f'{len(items)}</span> shown)</span></summary>')
        out.append('<p class="empty" hidden>No result of this area matches the filters.</p>')
        out.append('<table><colgroup><col class="c-st"><col class="c-sev"><col class="c-id">'
                   '<col class="c-subj"><col></colgroup><thead><tr><th>status</th>'
                   "<th>severity</th><th>rule</th><th>subject</th><th>title</th></tr></thead>"
                   "<tbody>")
        for f in items:
            rid = ids[id(f)]
            attrs = (f'id="{rid}" class="result" data-status="{f.status.value}" '
                     f'data-severity="{f.severity.value}" data-rule="{_e(f.rule_id)}" '
                     f'data-area="{_e(area)}"')
            aspect = (f' <span class="muted">[{_e(f.result.aspect.value)}]</span>'
                      if f.result.aspect else "")
            out.append(f"<tr {attrs}><td>{_badge(f.status)}</td><td>{_sev(f.severity)}</td>"
                       f"<td><code>{_e(f.rule_id)}</code></td><td>{_e(f.result.subject)}"
                       f"{aspect}</td><td>{_e(f.title)}</td></tr>")
            out.append(f'<tr class="detail" id="{rid}-d"><td colspan="2"></td><td colspan="3">')
            _detail(f, fix_of.get(id(f)), out)
            out.append("</td></tr>")
        out.append("</tbody></table></details></section>")
    if not by_area:
        out.append('<p class="empty">No results.</p>')
    out.append("</section>")


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """The whole page (``options`` are not used: the page is the same for any terminal)."""
    findings = sorted_findings(run)
    ids: dict[int, str] = {}
    seen: dict[str, int] = {}
    for f in findings:
        base = "r-" + safe_id(f"{f.rule_id}-{f.result.subject}").lower()
        seen[base] = seen.get(base, 0) + 1
        ids[id(f)] = base if seen[base] == 1 else f"{base}-{seen[base]}"
    groups = fix_groups(run)
    fix_of = {id(f): n for n, g in enumerate(groups, 1) for f in g.findings}
    out = ["<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           '<meta name="viewport" content="width=device-width, initial-scale=1">'
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
           "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
           f"<title>aiaudit: {_e(run.host.hostname)}: {_e(run.ruleset)}</title>"
           f"<style>{CSS}</style></head><body>"]
    _header(run, out)
    out.append("<main>")
    if groups:
        _fix_first(groups, ids, out)
    _results(run, ids, fix_of, out)
    out.append("</main>")
    out.append(f'<footer class="muted">aiaudit {_e(run.tool_version)} · ruleset '
               f"{_e(run.ruleset)} {_e(run.ruleset_version)} · filters: "
               "<code>#status=fail,error&amp;severity=high,critical</code> in the address "
               "</footer>")
    out.append(f"<script>{SCRIPT}</script></body></html>\n")
    return "\n".join(out)


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``html`` format."""
    return [ReporterSpec("html", render, "self-contained HTML page (filters, fix first)",
                         "html")]
