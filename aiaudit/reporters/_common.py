"""Helpers shared by the built-in reporters (not a plugin: the name starts with ``_``).

Every machine-readable format names the host the same way and computes the same stable
identity for a result, so that SARIF alerts, JUnit test names, SIEM events and Prometheus
series about one finding can be correlated across runs and formats.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Iterable, Mapping

from aiaudit.model import Finding, RunResult, Severity, Status
from aiaudit.parsers import lazy_pattern
from aiaudit.records import record

# XML 1.0 section 2.2 "Char": #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
# [#x10000-#x10FFFF].  Everything else (C0 controls, lone surrogates from undecodable file
# names, U+FFFE/U+FFFF) cannot appear in an XML document, not even as a character reference.
_XML_FORBIDDEN = lazy_pattern("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_SURROGATES = lazy_pattern("[\ud800-\udfff]")

SEVERITY_ORDER: tuple[Severity, ...] = tuple(Severity)
STATUS_ORDER: tuple[Status, ...] = (Status.FAIL, Status.ERROR, Status.WAIVED, Status.SKIP,
                                    Status.PASS)
"""Worst first: the order in which reports list results."""


def xml_safe(text: object) -> str:
    """``text`` with every character XML 1.0 forbids replaced by ``\\xNN``/``\\uNNNN``.

    Hostile config files can put NUL, escape or form-feed characters into evidence values;
    escaping (rather than dropping) keeps what was there visible to the reader.
    """
    return _XML_FORBIDDEN().sub(lambda m: _escape_char(m.group()), str(text))


def _escape_char(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def text_safe(text: object) -> str:
    """``text`` encodable as UTF-8: lone surrogates (undecodable bytes in file names read
    with ``surrogateescape``) become U+FFFD."""
    return _SURROGATES().sub("\ufffd", str(text))


def host_label(run: RunResult) -> str:
    """The name that separates hosts and images in every output: the image *name* for an
    offline scan of a golden image (not its version or build, so two builds of one image
    are one "host"), otherwise the hostname (:func:`aiaudit.identity.scan_name`)."""
    from aiaudit.identity import scan_name

    return scan_name(run.host)


def safe_id(text: str) -> str:
    """``text`` reduced to characters safe in ids, class names and URIs."""
    out = re.sub(r"[^A-Za-z0-9._:@+-]+", "_", text).strip("_")
    return out or "unknown"


def fingerprint(run: RunResult, finding: Finding) -> str:
    """Stable identity of a finding across runs: hash of rule id, host and subject.

    Neither the message nor the values are part of it, so the same problem on the same host
    keeps its identity when the wrong value changes.
    """
    key = "\x1f".join((finding.rule_id, host_label(run), finding.result.subject))
    import hashlib

    return hashlib.sha256(text_safe(key).encode("utf-8")).hexdigest()


def sorted_findings(run: RunResult) -> list[Finding]:
    """The findings in report order: rule order of the ruleset, then subject."""
    order = {r.id: i for i, r in enumerate(run.rules)}
    return sorted(run.findings, key=lambda f: (order.get(f.rule_id, len(order)), f.rule_id,
                                               f.result.subject))


def remediation_text(finding: Finding, *, markdown: bool = False) -> str:
    """The finding's fix as text (or markdown): summary, files to drop in, commands."""
    rem = finding.result.remediation
    if rem is None:
        return ""
    lines = [rem.summary]
    if rem.manual:
        lines += ["", f"By hand: {rem.manual}"] if markdown else [f"By hand: {rem.manual}"]
    for s in rem.snippets:
        body = s.content.rstrip("\n")
        if s.kind == "file":
            head = f"Drop in {s.path}:"
            lines += (["", f"{head}", "", "```", body, "```"] if markdown
                      else [head, *("    " + ln for ln in body.splitlines())])
        elif s.kind == "enable":
            cmd = f"systemctl enable {body}"
            lines += (["", "Enable at boot:", "", "```sh", cmd, "```"] if markdown
                      else ["Enable at boot:", f"    $ {cmd}"])
        else:
            body = s.shell().rstrip("\n")
            lines += (["", "Run now:", "", "```sh", body, "```"] if markdown
                      else ["Run now:", *("    $ " + ln for ln in body.splitlines())])
    return "\n".join(lines)


# C0 controls except TAB and LF, DEL, C1 controls (U+0080-U+009F: 8-bit CSI/OSC on some
# terminals), lone surrogates, and the bidirectional overrides/isolates that reorder what a
# reader sees (CVE-2021-42574, "Trojan Source").
_TERMINAL_UNSAFE = lazy_pattern(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_TERMINAL_UNSAFE_NO_LF = lazy_pattern(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def human_safe(text: object, *, newlines: bool = False) -> str:
    """``text`` with every character that could drive a terminal escaped as ``\\xNN`` /
    ``\\uNNNN``: ESC (colour, retitle, clear-screen sequences), CR (overwrite a line), BEL,
    BS, NUL, DEL, C1 controls, bidi overrides, and lone surrogates.  Line feeds become
    ``\\n`` unless ``newlines`` (multi-line snippets keep them); TAB stays.

    Every value a host, a saved report or a plugin supplies goes through this before it
    reaches a human output (text or HTML), so what was there stays visible and nothing in it
    is interpreted by the terminal or browser.
    """
    pat = (_TERMINAL_UNSAFE if newlines else _TERMINAL_UNSAFE_NO_LF)()
    return pat.sub(lambda m: "\\n" if m.group() == "\n" else _escape_char(m.group()),
                   str(text))


def html_safe(text: object, *, block: bool = False) -> str:
    """``text`` for HTML text or a quoted attribute: control characters shown escaped
    (:func:`human_safe`), then ``& < > " '`` escaped; ``block`` keeps line feeds (``<pre>``)."""
    import html

    return html.escape(human_safe(text, newlines=block), quote=True)


# --- Fix-first grouping (text and HTML reports) -------------------------------------------


@record(frozen=False)
class FixGroup:
    """Failures that one fix addresses, for the "fix first" part of human reports.

    Results whose remediation is identical (summary, snippets, manual step) are one group;
    groups whose drop-ins share a target path, or that run the same command, are one group
    too, because that is one action (``aiaudit remediate`` writes such a file once).
    """

    severity: Severity = Severity.INFO
    """The highest severity among :attr:`findings`."""
    summary: str = ""
    """One sentence saying what the fix does."""
    also: list[str] = field(default_factory=list)
    """Further summaries of fixes merged into this one (at most one)."""
    steps: list[str] = field(default_factory=list)
    """Further changes a person makes, when many fixes merged into this one."""
    findings: list[Finding] = field(default_factory=list)
    """The failures it fixes, worst fix first."""
    files: dict[str, list[str]] = field(default_factory=dict)
    """Target path -> lines of the drop-in."""
    commands: list[str] = field(default_factory=list)
    """Commands to run now, in order, without repeats."""
    enable: list[str] = field(default_factory=list)
    """systemd units to enable at boot."""
    manual: list[str] = field(default_factory=list)
    """Steps a person must take that no snippet does."""

    @property
    def rule_ids(self) -> list[str]:
        """The rules it fixes, in first-seen order."""
        return list(dict.fromkeys(f.rule_id for f in self.findings))

    def subjects(self, rule_id: str) -> list[str]:
        """The subjects of ``rule_id`` that it fixes."""
        return [f.result.subject for f in self.findings if f.rule_id == rule_id]


_HEREDOC = lazy_pattern(
    r"cat > (/[^\s'\"<>;&|]+) <<'?([A-Za-z_]+)'?\n((?:.*\n)*?)\2(?:\n(.*))?", re.DOTALL)


def split_heredoc(command: str) -> tuple[str, str, str] | None:
    """``(path, content, rest)`` for a command that writes a file with a here-document
    (``cat > /etc/x <<'EOF'`` ... ``EOF``, then more commands); ``None`` otherwise.  Lets a
    fix written as one shell command be grouped with fixes that write the same file."""
    m = _HEREDOC().fullmatch(command.rstrip("\n"))
    if m is None:
        return None
    return m.group(1), m.group(3), (m.group(4) or "").strip()


def _snippets(f: Finding) -> tuple[tuple[str, str | None, str], ...]:
    rem = f.result.remediation
    out: list[tuple[str, str | None, str]] = []
    for s in rem.snippets if rem is not None else ():
        split = split_heredoc(s.content) if s.kind == "command" else None
        if split is not None:
            path, content, rest = split
            out.append(("file", path, content))
            if rest:
                out.append(("command", None, rest))
        elif s.kind in ("file", "enable", "command"):
            out.append((s.kind, s.path, s.content))
        else:  # mask, edit, apply: the command a person would type
            out.append(("command", s.path, s.shell()))
    return tuple(out)


def _fix_key(f: Finding, generic: dict[str, str]) -> tuple:
    rem = f.result.remediation
    if rem is not None:
        return ("result", rem.summary, rem.manual, _snippets(f))
    if generic.get(f.rule_id):
        return ("rule", generic[f.rule_id])
    return ("none", f.rule_id)


def fix_groups(run: RunResult) -> list[FixGroup]:
    """The failing results (waived ones excluded) grouped by the fix that addresses them,
    ordered by the highest severity in the group, then by how many results it fixes."""
    generic = {r.id: r.remediation for r in run.rules}
    by_key: dict[tuple, list[Finding]] = {}
    for f in sorted_findings(run):
        if f.status is Status.FAIL:
            by_key.setdefault(_fix_key(f, generic), []).append(f)
    # worst and largest first, so a merged group is headed by its main fix
    keys = sorted(by_key, key=lambda k: (-max(f.severity.rank for f in by_key[k]),
                                         -len(by_key[k])))
    parent = list(range(len(keys)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    # one action: fixes that write the same file, or that end in the same command (the
    # sshd fixes each edit a line and all run `sshd -t && systemctl reload ssh`)
    owner: dict[tuple[str, str], int] = {}
    for i, k in enumerate(keys):
        if k[0] != "result":
            continue
        for kind, path, content in k[3]:
            shared = ("file", path) if kind == "file" and path else (kind, content.strip())
            if shared in owner:
                a, b = root(i), root(owner[shared])
                parent[max(a, b)] = min(a, b)
            else:
                owner[shared] = i
    members: dict[int, list[tuple]] = {}
    for i, k in enumerate(keys):
        members.setdefault(root(i), []).append(k)
    groups = [_make_group(members[r], by_key) for r in sorted(members)]
    groups.sort(key=lambda g: (-g.severity.rank, -len(g.findings)))
    return groups


MAX_SUMMARIES = 2
"""A group merged from more fixes than this gets one headline; the rest become steps."""


def _written(key: tuple) -> frozenset[tuple[str | None, str]]:
    """The (path, content) of the files a fix key writes."""
    if key[0] != "result":
        return frozenset()
    return frozenset((path, content) for kind, path, content in key[3] if kind == "file")


def _make_group(keys: list[tuple], by_key: dict[tuple, list[Finding]]) -> FixGroup:
    g = FixGroup()
    g.findings = [f for k in keys for f in by_key[k]]
    g.severity = max((f.severity for f in g.findings), key=lambda s: s.rank)
    summaries: list[str] = []
    written: dict[str, list[str]] = {}
    for k in keys:
        if k[0] == "result":
            _, summary, manual, snippets = k
            summaries.append(summary)
            if manual and manual not in g.manual:
                g.manual.append(manual)
            for kind, path, content in snippets:
                if kind == "file" and path:
                    blocks = written.setdefault(path, [])
                    if content not in blocks:
                        blocks.append(content)
                elif kind == "enable":
                    if content.strip() not in g.enable:
                        g.enable.append(content.strip())
                elif content.strip() and content.rstrip("\n") not in g.commands:
                    g.commands.append(content.rstrip("\n"))
        elif k[0] == "rule":
            summaries.append(k[1].strip())
        else:
            summaries.append(f"No fix is given: see `aiaudit explain {k[1]}`.")
    g.files = {p: "".join(b if b.endswith("\n") else b + "\n" for b in blocks)
               .rstrip("\n").split("\n") for p, blocks in written.items()}
    g.commands = _sysctl_load(g.files, g.commands)
    # a fix that writes exactly the files the first one writes (the boot and the running
    # variant of one firewall fix) is that fix: its summary would say the same again
    head_files = _written(keys[0])
    summaries = [x for k, x in zip(keys, summaries, strict=True)
                 if k is keys[0] or not head_files or _written(k) != head_files]
    summaries = list(dict.fromkeys(summaries))
    if len(summaries) <= MAX_SUMMARIES:
        g.summary, g.also = summaries[0], summaries[1:]
    elif not g.files:
        # the summaries are the fix (edit this line...): one headline, the rest are steps
        g.summary = f"{summaries[0]} (and {len(summaries) - 1} more changes, listed with it)"
        g.steps = summaries[1:]
    else:
        # what the drop-ins say is the fix; the per-setting summaries would repeat them
        nlines = sum(len(v) for v in g.files.values())
        parts = [f"Add {nlines} line{'s' if nlines != 1 else ''} to "
                 + ", ".join(sorted(g.files))]
        if g.commands:
            n = len(g.commands)
            parts.append(f"run {n} command{'s' if n != 1 else ''} to apply "
                         + ("it" if n == 1 else "them") + " now")
        g.summary = " and ".join(parts) + "."
    return g


_SYSCTL_W = re.compile(r"sysctl -w ([A-Za-z0-9_./*-]+)='([^'\n]*)'")
_SYSCTL_LINE = re.compile(r"([A-Za-z0-9_./*-]+) = (.*)")


def _sysctl_load(files: dict[str, list[str]], commands: list[str]) -> list[str]:
    """``sysctl -w KEY='VALUE'`` for each key of a sysctl.d drop-in the same fix writes is
    ``sysctl -p FILE`` (procps: load the settings of that file), one line for a person to
    paste instead of one per key; other commands stay, in order."""
    dropins = {p: {m.group(1): m.group(2) for ln in lines if (m := _SYSCTL_LINE.fullmatch(ln))}
               for p, lines in files.items() if p.startswith("/etc/sysctl.d/")}
    out: list[str] = []
    for cmd in commands:
        m = _SYSCTL_W.fullmatch(cmd)
        path = next((p for p, kv in dropins.items()
                     if m is not None and kv.get(m.group(1)) == m.group(2)), None)
        if path is None:
            out.append(cmd)
        elif f"sysctl -p {path}" not in out:
            out.append(f"sysctl -p {path}")
    return out


def heredoc(path: str, lines: list[str]) -> str:
    """A shell command writing ``lines`` to ``path``: a quoted here-document, so nothing in
    the content is expanded, with a delimiter no content line equals."""
    import shlex

    delim = "EOF"
    while delim in lines:
        delim += "_"
    return "\n".join([f"cat > {shlex.quote(path)} <<'{delim}'", *lines, delim])


def plain_expected(value: str | None) -> str | None:
    """An expected value as a person reads it: ``= 0`` is ``0``; ``None`` stays ``None``."""
    if value is None:
        return None
    v = str(value)
    return v[2:] if v.startswith("= ") else v


def evidence_text(e: object) -> str:
    """One piece of evidence as ``/abs/path:LINE: value`` or ``source = value``: absolute
    paths as on the scanned system (the root is named once, in the header)."""
    from aiaudit.model import Evidence

    assert isinstance(e, Evidence)
    if e.kind == "file":
        where = e.path or "/" + e.source.lstrip("/")
        if e.path and e.line is not None:
            where = f"{e.path}:{e.line}"
        return f"{where}: {e.value.strip()}" if e.value and e.value.strip() else where
    return f"{e.source} = {e.value}" if e.value is not None else e.source


SKIP_NO_USER = "no training user given"
"""Start of the skip message of the limits rules when no training user is known."""


def no_user_skips(run: RunResult) -> list[Finding]:
    """Results skipped because no training user is known (say it once, near the top)."""
    return no_user_skips_of(run.findings)


def no_user_skips_of(findings: Iterable[Finding]) -> list[Finding]:
    """Those of ``findings`` skipped because no training user is known."""
    return [f for f in findings
            if f.status is Status.SKIP and f.result.message.startswith(SKIP_NO_USER)]


def plural(n: int, word: str) -> str:
    """``1 result``, ``2 results``, ``2 fixes``."""
    return f"{n} {word}{'' if n == 1 else 'es' if word.endswith(('x', 's')) else 's'}"


def whole_scan_counts(run: RunResult) -> Mapping[str, Mapping[str, int]]:
    """Counts per severity and status of the whole scan (also when only the changes of a
    ``--changes-since`` run are listed): what the exit code is computed from."""
    return run.scan_counts if run.scan_counts is not None else run.counts_by_severity()


def verdict(run: RunResult) -> tuple[int, str]:
    """The exit code the scan's counts give and one sentence saying what it means (as
    :func:`aiaudit.runner.exit_status` with the default ``--on-error code``)."""
    whole = whole_scan_counts(run)
    rank = run.fail_on.rank

    def at_or_above(status: str) -> int:
        return sum(int(whole.get(s.value, {}).get(status, 0)) for s in Severity
                   if s.rank >= rank)

    at = f"at or above --fail-on {run.fail_on.value}"
    if at_or_above("fail"):
        return 1, (f"Exit code 1 (findings): {plural(at_or_above('fail'), 'failure')} {at}. "
                   "The scan itself worked; 1 means the host needs the fixes above.")
    if at_or_above("error"):
        return 3, (f"Exit code 3 (not evaluated; 0 with --on-error pass or --prolog, 1 with "
                   f"--on-error fail): no failure {at}, but "
                   f"{plural(at_or_above('error'), 'rule')} {at} could not be evaluated.")
    return 0, f"Exit code 0: no failure {at}."
