"""``text`` reporter: a report a person acts on, with what to fix at the end.

Order (the last screen of a terminal is what a person reads):

1. header: tool, ruleset, host identity, scan mode and root (named once: every path in the
   report is as on the scanned system), the training user and where it came from; a note
   when rules were skipped because no training user is known;
2. failures, grouped by the fix that addresses them (see
   :func:`aiaudit.reporters._common.fix_groups`): each fix is printed once, in full, as
   shell a person can paste (here-documents at column 0), after the results it fixes;
3. results that could not be evaluated, waived failures, not-applicable rules grouped by
   reason, passed rules as one count line (listed with ``-v``), notices;
4. "Fix first": one entry per fix, worst first, with the rules it fixes;
5. the summary: counts by status and severity and what the exit code means (with
   ``--changes-since``/``--state``: the changes shown and the totals of the whole scan,
   which decide the exit code).

With ``options["color"]`` it is rendered with rich: colours, prose wrapped to the terminal
width at word boundaries with a hanging indent, commands never wrapped (so they paste).
Otherwise it is plain and unwrapped (pipes, files, ``NO_COLOR``), built without importing
rich, and stable for golden files.  Every value from the host or a saved report goes
through :func:`~aiaudit.reporters._common.human_safe`: control characters are shown as
``\\xNN``, never sent to the terminal.
"""

from __future__ import annotations

from typing import Any, Mapping

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.core.escape import human_safe
from aiaudit.core.model import DEFAULT_FILE_MODE, Finding, Severity, Status, sorted_findings
from aiaudit.core.startup.records import record
from aiaudit.remediate.grouping import FixGroup, changes_nothing, fix_groups, heredoc
from aiaudit.reporters import fold
from aiaudit.reporters._common import (
    evidence_text,
    no_user_skips,
    no_user_skips_of,
    plain_expected,
    plural,
    verdict,
    whole_scan_counts,
)

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
SEVERITY_WIDTH = max(len(s.value) for s in Severity)


@record
class Line:
    """One output line: styled segments, an indent, and whether it may wrap."""

    segments: list[Segment]
    """The text, in styled pieces."""
    indent: int = 0
    """Columns of indent, kept on wrapped continuation lines."""
    wrap: bool = True
    """False for shell lines: a wrapped command would not paste."""
    hang: int = 0
    """Further indent of wrapped continuation lines (a numbered list item's text)."""

    def plain(self) -> str:
        """The line without styles."""
        return (" " * self.indent + "".join(t for t, _ in self.segments)).rstrip()


def _s(value: object) -> str:
    return human_safe(value)


def _change_tag(f: Finding) -> str:
    """`` (added)`` / `` (fixed, was fail)`` for a --changes-since result, else empty."""
    change = f.result.data.get("change") if f.result.data else None
    if not isinstance(change, dict) or "kind" not in change:
        return ""
    was = change.get("previous_status")
    return f" ({_s(change['kind'])}, was {_s(was)})" if was else f" ({_s(change['kind'])})"


def _rule_line(f: Finding, indent: int, status: Status | None = None) -> Line:
    status = status or f.status
    return Line([
        (f"{status.value.upper():<6}", STATUS_STYLE[status]), (" ", ""),
        (f"{f.severity.value:<{SEVERITY_WIDTH}}", SEVERITY_STYLE[f.severity]), (" ", ""),
        (_s(f.rule_id), "bold"), ("  ", ""), (_s(f.title), ""),
    ], indent)


def _result_lines(f: Finding, indent: int) -> list[Line]:
    """Subject and message, then expected/actual and evidence, of one result."""
    r = f.result
    aspect = f" [{r.aspect.value}]" if r.aspect else ""
    out = [Line([(_s(r.subject), "cyan"), (aspect, "magenta"),
                 (_change_tag(f), "bold yellow"), (": ", ""), (_s(r.message), "")], indent)]
    facts: list[Segment] = []
    expected = plain_expected(r.expected)
    if expected is not None:
        facts += [("expected ", "dim"), (_s(expected), "")]
    if r.actual is not None:
        facts += [(", " if facts else "", ""), ("actual ", "dim"), (_s(r.actual), "bold")]
    if r.evidence:
        facts += [("; " if facts else "", ""), ("evidence: ", "dim"),
                  ("; ".join(_s(evidence_text(e)) for e in r.evidence), "")]
    if facts:
        out.append(Line(facts, indent + 2))
    if f.waiver is not None:
        w = f.waiver
        out.append(Line([("waived: ", "yellow"), (_s(f"{w.reason} (owner {w.owner}, "
                                                     f"expires {w.expires})"), "")],
                        indent + 2))
    return out


def _entry_lines(e: fold.Entry, indent: int, seen: dict[str, str],
                 head: Line | None = None) -> list[Line]:
    """One folded entry (see :mod:`aiaudit.reporters.fold`): the subjects and message (after
    ``head``'s status, severity and rule id, for a rule with one entry), then only the
    facts the message does not say and evidence not printed before."""
    f = e.findings[0]
    r = f.result
    aspect = f" [{r.aspect.value}]" if r.aspect else ""
    lead = [*head.segments[:-1]] if head is not None else []  # without the title
    where = f"{f.rule_id} {e.subject}"
    out = [Line([*lead, (_s(e.subject), "cyan"), (aspect, "magenta"),
                 (_change_tag(f), "bold yellow"), (": ", ""),
                 (_s(fold.said_before(e.message, seen, where)), "")],
                head.indent if head is not None else indent)]
    got = fold.facts(r, e.message, seen, where)
    facts: list[Segment] = []
    if got.expected is not None:
        facts += [("expected ", "dim"), (_s(got.expected), "")]
    if got.actual is not None:
        facts += [(", " if facts else "", ""), ("actual ", "dim"), (_s(got.actual), "bold")]
    shown = [_s(t) for t in got.evidence]
    if got.missing:
        shown.append("absent: " + _s(", ".join(got.missing)) + " (-v: where it looked)")
    shown += [f"as for {_s(w)} above" for w in got.same_as]
    if shown:
        facts += [("; " if facts else "", ""), ("evidence: ", "dim"), ("; ".join(shown), "")]
    if facts:
        out.append(Line(facts, indent + 2))
    if f.waiver is not None:
        w = f.waiver
        out.append(Line([("waived: ", "yellow"), (_s(f"{w.reason} (owner {w.owner}, "
                                                     f"expires {w.expires})"), "")],
                        indent + 2))
    return out


def _results(findings: list[Finding], indent: int, seen: dict[str, str] | None) -> list[Line]:
    """The results of one rule under its rule line (status, severity, id, title): each in
    full (``seen`` None, ``-v``), or folded and trimmed; a rule whose results fold into one
    entry is one line, its title left to ``-v``, JSON and ``aiaudit explain``."""
    head = _rule_line(findings[0], indent - 2)
    if seen is None:
        return [head, *(ln for f in findings for ln in _result_lines(f, indent))]
    folded = fold.entries(findings)
    if len(folded) == 1:
        return _entry_lines(folded[0], indent, seen, head)
    return [head, *(ln for e in folded for ln in _entry_lines(e, indent, seen))]


def _by_rule(findings: list[Finding]) -> list[list[Finding]]:
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.rule_id, []).append(f)
    return list(groups.values())


def _fix_block(n: int, g: FixGroup, seen: dict[str, str] | None = None) -> list[Line]:
    out = [Line([]), Line([
        (f"Fix {n}", "bold green"), (" · ", "dim"),
        (g.severity.value, SEVERITY_STYLE[g.severity]), (" · ", "dim"),
        (plural(len(g.findings), "result"), ""),
        (" (described under Fix first, at the end)", "dim")])]
    for rule_findings in _by_rule(g.findings):
        out += _results(rule_findings, 4, seen)
    # the further changes of a merged fix, unless its commands below make them (each
    # says what it changes): the same fix is not described twice
    for step in g.steps if not (g.files or g.commands or g.enable) else ():
        out.append(Line([("Also: ", "bold green"), (_s(step), "")], 2))
    for m in g.manual:
        out.append(Line([("By hand: ", "bold yellow"), (_s(m), "")], 2))
    # the kernel command line of a stateless image: only its provisioner changes it
    for p in dict.fromkeys(f.result.remediation.provisioner for f in g.findings
                           if f.result.remediation and f.result.remediation.provisioner):
        out.append(Line([("For the provisioner: ", "bold yellow"), (_s(p), "")], 2))
    shell: list[str] = []
    for path, lines in g.files.items():
        shell.append(heredoc(path, lines, g.modes.get(path, DEFAULT_FILE_MODE)))
    shell += g.commands
    shell += [f"systemctl enable {u}" for u in g.enable]
    if shell and changes_nothing(g):  # ss -tlpn ...: to look first, not the fix
        out.append(Line([(f"Fix {n}, to look first (a diagnosis: it changes nothing):",
                          "yellow")], 2))
    elif shell:
        out.append(Line([(f"Fix {n}, as root (paste as is):", "green")], 2))
        for block in shell:
            for cl in human_safe(block, newlines=True).split("\n"):
                out.append(Line([(cl, "")], 0, wrap=False))
    return out


KIND_LABEL = {"bootable": "bootable host", "stateless": "stateless image",
              "container": "container image"}
"""How the header names :attr:`~aiaudit.core.model.HostInfo.image_kind`."""


def _header(run: RunResult) -> list[Line]:
    h = run.host
    osname = f" ({_s(h.os_name)})" if h.os_name else ""
    image = f", image {_s(h.image_id)}" if h.image_id else ""
    out = [Line([("aiaudit ", "bold"), (_s(run.tool_version), ""), (" · ruleset ", "dim"),
                 (_s(f"{run.ruleset} {run.ruleset_version}"), "bold"), (" · host ", "dim"),
                 (f"{_s(h.hostname)}{osname}", "bold"), (image, "dim")])]
    if h.image_kind:  # a bootable host is what the reader expects: why, only for the others
        out[0].segments.append((" · " + _s(KIND_LABEL.get(h.image_kind, h.image_kind)), "bold"))
    where = ("the running system" if h.mode == "live" and h.root == "/" else
             f"root {_s(h.root)}")
    paths = "" if h.root == "/" else " (paths below are as on the scanned system)"
    facts = [(f"{h.mode} scan of {where}{paths}, started {_s(run.started)}, "
              f"took {run.duration_s:.2f}s", "dim")]
    if run.training_user:
        src = f" (from {_s(run.training_user_source)})" if run.training_user_source else ""
        facts += [("; training user ", "dim"), (_s(run.training_user), "bold"), (src, "dim")]
    # a ruleset that is not shipped says where it came from (a file named like a shipped
    # ruleset must be visible as such)
    if run.ruleset_source and not run.ruleset_source.startswith("aiaudit.rulesets/"):
        facts += [("; ruleset from ", "dim"), (_s(run.ruleset_source), "bold")]
    out.append(Line(facts))
    if h.image_kind and h.image_kind != "bootable":
        why = f" ({_s(h.image_kind_reason)})" if h.image_kind_reason else ""
        out.append(Line([("Kind: ", "dim"), (_s(KIND_LABEL.get(h.image_kind, h.image_kind)),
                                              "bold"), (why, "dim")]))
    no_user = no_user_skips(run)
    if no_user:
        ids = ", ".join(dict.fromkeys(_s(f.rule_id) for f in no_user))
        # $SUDO_USER and $SLURM_JOB_USER name users of this machine, not of another root
        ways = ", sudo, a Slurm job or settings.user" if h.root == "/" else " or settings.user"
        out.append(Line([("Note: ", "bold yellow"), (
            f"no training user is known: {plural(len(no_user), 'rule')} were not evaluated "
            f"({ids}); name one with --user NAME{ways}.", "yellow")]))
    return out


MAX_ALONE = 3
"""Rules skipped for a reason of their own listed each with its reason; more are named on
one line (their reasons with ``-v``)."""
MIN_SHARED = 3
"""Rules a reason must be shared by to get a line of its own when the rules of a reason of
their own are named on one line (fewer join them there)."""


def _skipped(skips: list[Finding], verbose: bool) -> list[Line]:
    out = [Line([]), Line([(f"Not applicable ({len(skips)})", "bold underline")])]
    if verbose:
        for f in skips:
            out.append(_rule_line(f, 0))
            out += _result_lines(f, 4)
        return out
    shared, alone = _skip_groups(skips)
    out += [Line([(_s(reason), ""), (f": {plural(n, 'rule')}", "bold")], 2)
            for reason, n in shared]
    if len(alone) <= MAX_ALONE:  # a few: each with its reason
        out += [Line([(_s(reason), ""), (": ", "bold"), (_s(rid), "dim")], 2)
                for reason, rid in alone]
    else:
        out.append(Line([(f"{plural(len(alone), 'rule')} for other reasons (-v says "
                          "which): ", ""), (", ".join(_s(i) for _r, i in alone), "dim")],
                        2, hang=2))
    return out


def _skip_groups(skips: list[Finding]) -> tuple[list[tuple[str, int]], list[tuple[str, str]]]:
    """The skip reasons shared by several rules (with their count: a line each, the ids
    with -v) and the rules with a reason of their own (``(reason, rule id)``).  The rules
    skipped for want of a training user are left out (the note at the top says it).  When
    the rules of a reason of their own are too many to list each with its reason, a reason
    shared by fewer than :data:`MIN_SHARED` rules joins them (its line would say little
    more)."""
    reasons: dict[str, list[Finding]] = {}
    no_user = {id(f) for f in no_user_skips_of(skips)}
    for f in skips:
        if id(f) not in no_user:
            reasons.setdefault(f.result.message, []).append(f)
    groups = [(reason, list(dict.fromkeys(f.rule_id for f in items)))
              for reason, items in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    alone = [(reason, ids[0]) for reason, ids in groups if len(ids) == 1]
    least = MIN_SHARED if len(alone) > MAX_ALONE else 2
    alone = [(reason, rid) for reason, ids in groups if len(ids) < least for rid in ids]
    return [(reason, len(ids)) for reason, ids in groups if len(ids) >= least], alone


MAX_FIX_FIRST = 5
"""Entries of the closing "Fix first" list (the rest are named by count): with the summary,
the list fits the last 20 lines of the report."""


MAX_IDS = 6
"""Rule ids named per entry of the closing list (all of them are listed with the fix)."""


def _fix_first(groups: list[FixGroup], nfail: int) -> list[Line]:
    out = [Line([]), Line([(f"Fix first ({plural(len(groups), 'fix')} for "
                            f"{plural(nfail, 'failure')}, worst first; each is shown in "
                            "full above)", "bold underline")])]
    for n, g in enumerate(groups[:MAX_FIX_FIRST], 1):
        ids = []
        for rid in g.rule_ids:
            k = len(g.subjects(rid))
            ids.append(_s(rid) + (f" ({k} results)" if k > 1 else ""))
        one = f" ({_s(g.rule_ids[0])})" if len(ids) == 1 else ""  # one rule: on this line
        out.append(Line([(f"{n}. ", "bold"), (g.severity.value, SEVERITY_STYLE[g.severity]),
                         (f", {plural(len(g.findings), 'result')}{one}: ", ""),
                         (_s(" ".join([g.summary, *g.also])), "")], 2, hang=3))
        if one:
            continue
        shown = ", ".join(ids[:MAX_IDS]) + (
            f", and {plural(len(ids) - MAX_IDS, 'more rule')} (listed under Fix {n})"
            if len(ids) > MAX_IDS else "")
        out.append(Line([("fixes " + shown, "dim")], 5))
    rest = groups[MAX_FIX_FIRST:]
    if rest:
        n = sum(len(g.findings) for g in rest)
        worst = max((g.severity for g in rest), key=lambda s: s.rank)
        out.append(Line([(f"and {plural(len(rest), 'more fix')} ({plural(n, 'result')}, "
                          f"{worst.value} at worst): Fix {MAX_FIX_FIRST + 1} onwards above",
                          "dim")], 2))
    return out


def _counts(by_sev: Mapping[str, Mapping[str, int]]) -> tuple[dict[str, int], dict[str, int]]:
    status = {s.value: 0 for s in Status}
    failed: dict[str, int] = {}
    for sev in Severity:
        row = by_sev.get(sev.value, {})
        for s in Status:
            status[s.value] += int(row.get(s.value, 0))
        if row.get("fail"):
            failed[sev.value] = int(row["fail"])
    return status, failed


def _summary(run: RunResult) -> list[Line]:
    status, failed = _counts(whole_scan_counts(run))
    total = sum(status.values())
    sev_txt = ", ".join(f"{failed[s.value]} {s.value}" for s in reversed(Severity)
                        if s.value in failed)
    out = [Line([])]
    if run.scan_counts is not None:
        kinds: dict[str, int] = {}
        for f in run.findings:
            change = f.result.data.get("change") if f.result.data else None
            if isinstance(change, dict):
                kinds[str(change.get("kind"))] = kinds.get(str(change.get("kind")), 0) + 1
        shown = ", ".join(f"{n} {_s(k)}" for k, n in sorted(kinds.items())) or "none"
        out.append(Line([("Changes shown: ", "bold"),
                         (f"{plural(len(run.findings), 'result')} ({shown}); the totals "
                          "below are of the whole scan and decide the exit code", "")]))
    out.append(Line([
        ("Summary: ", "bold"),
        (f"{plural(len(run.rules), 'rule')}, {plural(total, 'result')}: ", ""),
        (f"{status['fail']} fail" + (f" ({sev_txt})" if sev_txt else ""),
         "bold red" if status["fail"] else ""), (", ", ""),
        (f"{status['error']} error", "bold magenta" if status["error"] else ""), (", ", ""),
        (f"{status['pass']} pass", "green"), (", ", ""),
        (f"{status['skip']} not applicable", "dim"), (", ", ""),
        (f"{status['waived']} waived", "yellow" if status["waived"] else ""),
    ]))
    code, text = verdict(run)
    style = {1: "bold red", 3: "bold magenta"}.get(code, "bold green")
    out.append(Line([(text, style)]))
    return out


def build(run: RunResult, verbose: bool = False) -> list[Line]:
    """The report as lines."""
    out = _header(run)
    findings = sorted_findings(run)
    # with --changes-since every result shown is a change: list them all, fixed ones too
    verbose = verbose or run.scan_counts is not None
    groups = fix_groups(run)
    # evidence printed so far -> where; None with -v: every result in full
    seen: dict[str, str] | None = None if verbose else {}
    nfail = sum(1 for f in findings if f.status is Status.FAIL)
    if nfail:
        out += [Line([]), Line([(f"Failures ({nfail}), by the fix that addresses them",
                                 "bold underline")])]
        for n, g in enumerate(groups, 1):
            out += _fix_block(n, g, seen)
    for status, title in ((Status.ERROR, "Could not evaluate"), (Status.WAIVED, "Waived")):
        out += _section(title, [f for f in findings if f.status is status], seen)
    skips = [f for f in findings if f.status is Status.SKIP]
    if skips:
        out += _skipped(sorted(skips, key=lambda f: -f.severity.rank), verbose)
    out += _passed([f for f in findings if f.status is Status.PASS], verbose)
    if run.notices:
        out += [Line([]), Line([("Notices", "bold underline")])]
        for notice in run.notices:
            out.append(Line([("- " + _s(notice), "yellow")], 2))
    if groups:
        out += _fix_first(groups, nfail)
    out += _summary(run)
    return out


def _section(title: str, items: list[Finding],
             seen: dict[str, str] | None = None) -> list[Line]:
    """The results that could not be evaluated (or were waived), worst first, by rule."""
    if not items:
        return []
    items.sort(key=lambda f: -f.severity.rank)
    out = [Line([]), Line([(f"{title} ({len(items)})", "bold underline")])]
    for rule_findings in _by_rule(items):
        out += _results(rule_findings, 4, seen)
    return out


def _passed(passed: list[Finding], verbose: bool) -> list[Line]:
    """The passed results: one count line, or (``verbose``) each of them."""
    if not passed:
        return []
    if not verbose:
        return [Line([]), Line([(f"Passed: {plural(len(passed), 'result')} "
                                 f"of {plural(len({f.rule_id for f in passed}), 'rule')} "
                                 "(-v lists them)", "green")])]
    out = [Line([]), Line([(f"Passed ({len(passed)})", "bold underline")])]
    for f in sorted(passed, key=lambda f: -f.severity.rank):
        out.append(_rule_line(f, 0))
        out += _result_lines(f, 4)
    return out


MAX_PLAIN = 300
"""Longest prose line of the plain report (pipes, files): a longer one is wrapped at
:data:`WRAP_PLAIN` columns at word boundaries; shell lines are never wrapped."""
WRAP_PLAIN = 280


def _plain_lines(line: Line) -> str:
    """``line`` as plain text, wrapped with a hanging indent when longer than
    :data:`MAX_PLAIN` (a list of 40 rule ids, a message quoting 85 package updates)."""
    text = line.plain()
    if len(text) <= MAX_PLAIN or not line.wrap:
        return text + "\n"
    return "".join(ln + "\n" for ln in wrap_words(
        text, WRAP_PLAIN, " " * (line.indent + line.hang + 2)))


def _chunks(text: str) -> list[str]:
    """``text`` as alternating runs of spaces and words (what :mod:`textwrap` splits on
    once tabs are expanded and other whitespace made spaces)."""
    out: list[str] = []
    spaces = 0
    for i, part in enumerate(text.split(" ")):
        spaces += i > 0
        if part:
            if spaces:
                out.append(" " * spaces)
                spaces = 0
            out.append(part)
    if spaces:
        out.append(" " * spaces)
    return out


def wrap_words(text: str, width: int, indent: str) -> list[str]:
    """``textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False,
    break_on_hyphens=False)``, line for line (a test compares them): greedy filling at
    spaces, the first line's leading spaces kept, spaces at the breaks dropped, a word
    longer than the width on a line of its own.  Written out because importing
    :mod:`textwrap` cost a report with one long line 4.6 M instructions, 0.7% of a live
    scan."""
    chunks = _chunks(text.expandtabs().translate(_SPACES))
    chunks.reverse()
    lines: list[str] = []
    while chunks:
        head = indent if lines else ""
        room = width - len(head)
        if lines and not chunks[-1].strip():
            chunks.pop()
        line: list[str] = []
        used = 0
        while chunks and used + len(chunks[-1]) <= room:
            used += len(chunks[-1])
            line.append(chunks.pop())
        if chunks and len(chunks[-1]) > room and not line:
            line.append(chunks.pop())  # a word longer than the line: on its own
        if line and not line[-1].strip():
            line.pop()
        if line:
            lines.append(head + "".join(line))
    return lines


_SPACES = str.maketrans("\n\x0b\x0c\r", "    ")
"""The whitespace textwrap turns into spaces (tabs are expanded first)."""


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """Render the report; through rich, coloured and wrapped, when ``options['color']``."""
    lines = build(run, bool(options.get("verbose")))
    if not options.get("color"):
        return "".join(_plain_lines(line) for line in lines)
    import io

    from rich.console import Console
    from rich.text import Text

    buf = io.StringIO()
    width = options.get("width")
    console = Console(file=buf, force_terminal=True, color_system="standard",
                      width=int(width) if width else None, highlight=False, markup=False,
                      emoji=False)
    for line in lines:
        text = Text(no_wrap=not line.wrap)
        for t, style in line.segments:
            text.append(t, style=style or None)
        pad = Text(" " * line.indent)
        if not line.wrap:
            console.print(pad + text, soft_wrap=True)
            continue
        # wrap at word boundaries ourselves, so continuation lines keep the indent and
        # carry no trailing padding (Padding would fill every line to the full width)
        hang = Text(" " * (line.indent + line.hang))
        parts = text.wrap(console, max(20, console.width - line.indent - line.hang),
                          overflow="fold")
        for k, part in enumerate(parts):
            part.rstrip()
            console.print((pad if k == 0 else hang) + part, soft_wrap=True)
    return buf.getvalue()


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``text`` format."""
    return [ReporterSpec("text", render, "readable report (coloured on a terminal)", "txt")]
