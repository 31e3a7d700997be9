"""``text`` reporter: a readable report, grouped by status and severity.

With ``options["color"]`` it is rendered with rich (colours by severity and status);
otherwise it is plain text, built without importing rich (fast, and right for pipes, files
and ``NO_COLOR``).
"""

from __future__ import annotations

from typing import Any, Mapping

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.model import Finding, Severity, Status

Segment = tuple[str, str]
"""(text, rich style)."""

STATUS_STYLE = {
    Status.FAIL: "bold red",
    Status.ERROR: "bold magenta",
    Status.SKIP: "dim",
    Status.PASS: "green",
    Status.WAIVED: "yellow",
}
SEVERITY_STYLE = {
    Severity.CRITICAL: "bold white on red",
    Severity.HIGH: "bold red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.INFO: "dim",
}
GROUP_ORDER = (Status.FAIL, Status.ERROR, Status.WAIVED, Status.SKIP, Status.PASS)
GROUP_TITLE = {
    Status.FAIL: "Failed",
    Status.ERROR: "Could not evaluate",
    Status.WAIVED: "Waived",
    Status.SKIP: "Not applicable",
    Status.PASS: "Passed",
}


def _sort_key(f: Finding) -> tuple[int, str, str]:
    return (-f.severity.rank, f.rule_id, f.result.subject)


def _change_tag(f: Finding) -> str:
    """`` (added)`` / `` (fixed, was fail)`` for a --changes-since result, else empty."""
    change = f.result.data.get("change") if f.result.data else None
    if not isinstance(change, dict) or "kind" not in change:
        return ""
    was = change.get("previous_status")
    return f" ({change['kind']}, was {was})" if was else f" ({change['kind']})"


def _detail_lines(f: Finding) -> list[list[Segment]]:
    r = f.result
    lines: list[list[Segment]] = []
    ind = "      "
    lines.append([(ind + r.message, "")])
    if r.expected is not None or r.actual is not None:
        lines.append([(ind + "expected: ", "dim"), (str(r.expected), ""),
                      ("   actual: ", "dim"), (str(r.actual), "bold")])
    for e in r.evidence:
        val = f" = {e.value}" if e.value is not None and e.kind != "file" else (
            f"  {e.value.strip()}" if e.value else "")
        lines.append([(ind + "evidence: ", "dim"), (e.source, "underline"), (val, "")])
    if f.waiver is not None:
        w = f.waiver
        lines.append([(ind + "waived: ", "yellow"),
                      (f"{w.reason} (owner {w.owner}, expires {w.expires})", "")])
    rem = r.remediation
    if rem is not None and r.status is Status.FAIL:
        lines.append([(ind + "fix: ", "bold green"), (rem.summary, "")])
        if rem.manual:
            lines.append([(ind + "by hand: ", "bold yellow"), (rem.manual, "")])
        for s in rem.snippets:
            if s.kind == "file":
                lines.append([(ind + "  # file " + str(s.path), "green")])
                for cl in s.content.rstrip("\n").splitlines():
                    lines.append([(ind + "    " + cl, "")])
            elif s.kind == "enable":
                lines.append([(ind + "  $ systemctl enable " + s.content.strip(), "green")])
            else:
                for cl in s.shell().rstrip("\n").splitlines():
                    lines.append([(ind + "  $ " + cl, "green")])
    return lines


def build(run: RunResult, verbose: bool = False) -> list[list[Segment]]:
    """The report as lines of styled segments."""
    h = run.host
    out: list[list[Segment]] = []
    osname = f" ({h.os_name})" if h.os_name else ""
    out.append([("aiaudit ", "bold"), (run.tool_version, ""), ("  ruleset ", "dim"),
                (f"{run.ruleset} {run.ruleset_version}", "bold"), ("  host ", "dim"),
                (f"{h.hostname}{osname}", "bold"), (f"  {h.mode}, root {h.root}", "dim"),
                (f", image {h.image_id}" if h.image_id else "", "dim")])
    out.append([(f"started {run.started}, took {run.duration_s:.2f}s", "dim")])
    groups: dict[Status, list[Finding]] = {s: [] for s in GROUP_ORDER}
    for f in run.findings:
        groups[f.status].append(f)
    for status in GROUP_ORDER:
        items = sorted(groups[status], key=_sort_key)
        if not items:
            continue
        out.append([])
        out.append([(f"{GROUP_TITLE[status]} ({len(items)})", "bold underline")])
        for f in items:
            aspect = f" [{f.result.aspect.value}]" if f.result.aspect else ""
            out.append([
                (f"{status.value.upper():<6}", STATUS_STYLE[status]), (" ", ""),
                (f"{f.severity.value:<8}", SEVERITY_STYLE[f.severity]), (" ", ""),
                (f.rule_id, "bold"), ("  ", ""), (f.result.subject, "cyan"),
                (aspect, "magenta"), (_change_tag(f), "bold yellow"),
                ("  " + (f.title if status is not Status.PASS or verbose else ""), "dim"),
            ])
            if status in (Status.PASS,) and not verbose:
                continue
            if status is Status.SKIP and not verbose:
                out.append([("      " + f.result.message, "dim")])
                continue
            out.extend(_detail_lines(f))
    if run.notices:
        out.append([])
        out.append([("Notices", "bold underline")])
        for n in run.notices:
            out.append([("  - " + n, "yellow")])
    c = run.counts()
    failed_sev = {}
    for f in run.findings:
        if f.status is Status.FAIL:
            failed_sev[f.severity] = failed_sev.get(f.severity, 0) + 1
    sev_txt = ", ".join(f"{n} {s.value}" for s, n in
                        sorted(failed_sev.items(), key=lambda kv: -kv[0].rank))
    out.append([])
    out.append([
        ("Summary: ", "bold"),
        (f"{len(run.rules)} rules, {len(run.findings)} results: ", ""),
        (f"{c['pass']} pass", "green"), (", ", ""),
        (f"{c['fail']} fail" + (f" ({sev_txt})" if sev_txt else ""),
         "bold red" if c["fail"] else ""), (", ", ""),
        (f"{c['error']} error", "bold magenta" if c["error"] else ""), (", ", ""),
        (f"{c['skip']} skip", "dim"), (", ", ""),
        (f"{c['waived']} waived", "yellow" if c["waived"] else ""),
        (f"  (fail-on {run.fail_on.value})", "dim"),
    ])
    return out


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """Render the report; coloured through rich when ``options['color']`` is true."""
    lines = build(run, bool(options.get("verbose")))
    if not options.get("color"):
        return "".join("".join(t for t, _ in line).rstrip() + "\n" for line in lines)
    import io

    from rich.console import Console
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, color_system="standard",
                      width=int(options.get("width") or 120), highlight=False,
                      soft_wrap=True)
    for line in lines:
        text = Text()
        for t, style in line:
            text.append(t, style=style or None)
        console.print(text)
    return buf.getvalue()


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``text`` format."""
    return [ReporterSpec("text", render, "readable report (coloured on a terminal)", "txt")]
