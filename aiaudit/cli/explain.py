"""``aiaudit explain RULE`` and ``aiaudit rules``: what a rule checks, what it expects and
what its fix writes, as a person reads it.

What a rule expects and how it is fixed are decided by its check from its params; rather
than restating each check's logic here, the rules are evaluated once against a *stock
probe root*: an empty offline root (a temporary directory holding only a Debian-style
``/etc/ssh/sshd_config`` that includes its drop-in folder), where nothing is tuned.  A rule
that fails there shows the fix its check gives on such a host (the files it writes, where,
and the commands); its ``expected`` value is the one every report shows.  Nothing of the
machine aiaudit runs on is read (the probe is offline, and runs no command), and nothing is
written but the temporary directory.
"""

from __future__ import annotations

import difflib
import os
import tempfile
import textwrap
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from aiaudit.core.errors import UsageError
from aiaudit.core.escape import human_safe
from aiaudit.core.model import DEFAULT_FILE_MODE, Result, Snippet, SnippetKind, Status
from aiaudit.core.ruleset import Rule, Ruleset

if TYPE_CHECKING:
    from aiaudit.core.host import Deadline

PROBE_FILES = {"etc/ssh/sshd_config": "Include /etc/ssh/sshd_config.d/*.conf\n"}
"""The stock probe root: only what makes sshd's compiled-in defaults decide."""

SYSCTL_OPS = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
              "in": "one of", "not_in": "none of"}
"""``kernel.sysctl`` ``op`` -> how a person writes it."""


def find_rule(rs: Ruleset, rule_id: str) -> Rule:
    """The rule ``rule_id`` names, case-insensitively; a usage error suggesting the nearest
    ids (``difflib``) when there is none."""
    want = rule_id.strip().upper()
    for r in rs.rules:
        if r.id.upper() == want:
            return r
    ids = [r.id for r in rs.rules]
    near = difflib.get_close_matches(want, ids, n=3, cutoff=0.6)
    if not near:
        # a fragment (SWAPPINESS) names the rules that contain it
        near = [i for i in ids if want and want in i][:3]
    hint = f"; did you mean {' or '.join(near)}?" if near else \
        " (`aiaudit rules` lists them)"
    if want in {d.upper() for d in rs.disabled}:
        hint = " (it is disabled in this ruleset)"
    raise UsageError(f"unknown rule {rule_id!r} in ruleset {rs.name}{hint}")


def probe(rs: Ruleset, rules: Sequence[Rule], deadline: Deadline | None = None
          ) -> dict[str, list[Result]]:
    """Each rule's results on the stock probe root (see the module docstring); none when
    no temporary directory can be made.  Within ``deadline`` (the command's
    ``--timeout``): a rule not done by then shows what its params say."""
    from aiaudit.core.host import Host
    from aiaudit.core.scan import ScanOptions, scan

    if not rules:
        return {}
    try:
        with tempfile.TemporaryDirectory(prefix="aiaudit-probe-") as root:
            for rel, text in PROBE_FILES.items():
                path = os.path.join(root, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
            run = scan(rs, Host(root, live=False),
                       ScanOptions(only=tuple(r.id for r in rules), rule_timeout=5.0,
                                   deadline=deadline))
    except OSError:
        # no writable temporary directory (a read-only container): explain without it
        return {}
    out: dict[str, list[Result]] = {}
    for f in run.findings:
        out.setdefault(f.rule_id, []).append(f.result)
    return out


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None:
        return "any"
    if isinstance(v, (list, tuple)):
        return ", ".join(_value(x) for x in v) or "none"
    if isinstance(v, Mapping):
        return "; ".join(f"{k} {_value(x)}" for k, x in v.items()) or "none"
    return str(v)


def _has_predicate(p: Mapping[str, Any]) -> bool:
    from aiaudit.core.ruleset.predicates import CONSTRAINT_KEYS

    return any(k in p for k in CONSTRAINT_KEYS)


def _predicate_text(p: Mapping[str, Any]) -> str:
    """An expectation's params (:mod:`aiaudit.core.ruleset.predicates`) as a person writes them:
    ``> 0 and <= 4``, ``[>= 4096] [any] [>= 67108864]``, ``only of a, b``."""
    from aiaudit.core.ruleset.predicates import Predicate

    try:
        return Predicate.from_params(p).text()
    except (TypeError, ValueError, AttributeError):  # params not validated (shipped)
        return _value(dict(p))


def params_text(params: Mapping[str, Any]) -> list[str]:
    """The params as ``name: value`` lines, without JSON punctuation."""
    lines = []
    for k, v in sorted(params.items()):
        if k == "op" and isinstance(v, str):
            v = f"{v} ({SYSCTL_OPS.get(v, v)})"
        elif k == "fields" and isinstance(v, list):
            v = " ".join("[any]" if fv is None else f"[{_predicate_text(fv)}]" for fv in v)
        elif k in ("min_exclusive", "max_exclusive") and isinstance(v, bool):
            v = "yes (the bound itself fails)" if v else "no (the bound itself passes)"
        elif k in ("parts",) and isinstance(v, list):
            v = "; ".join(str(part.get("name") or part.get("check", "?")) for part in v
                          if isinstance(part, Mapping))
        lines.append(f"{k.replace('_', ' ')}: {human_safe(_value(v))}")
    return lines


def expected_text(rule: Rule, results: Iterable[Result] = ()) -> str:
    """What the rule expects, as a person writes it: ``vm.swappiness <= 10``."""
    p = rule.params
    if rule.check.id == "kernel.sysctl" and "key" in p and _has_predicate(p):
        return human_safe(f"{p['key']} {_predicate_text(p)}")
    if rule.check.id == "limits.configured" and {"item", "type"} <= set(p) and \
            _has_predicate(p):
        who = "every user" if p.get("users", "*") == "*" else ", ".join(p["users"])
        want = _predicate_text(p).replace("inf", "unlimited")
        return human_safe(f"{p['type']} {p['item']} {want} for {who}")
    if rule.check.id == "limits.effective" and {"item", "type", "min"} <= set(p):
        least = "unlimited" if p["min"] == "unlimited" else f">= {_value(p['min'])}"
        if p.get("max") not in (None, "unlimited"):
            least += f" and <= {_value(p['max'])}"
        return f"{p['type']} {p['item']} {least} for the training user"
    seen: list[str] = []
    for r in results:
        if r.expected is None:
            continue
        exp = str(r.expected)
        op_first = exp[:1] in "<>=!" or exp.startswith(("one of", "none of"))
        if exp.startswith(r.subject):
            text = exp
        else:
            text = f"{r.subject} {exp}" if op_first else f"{r.subject}: {exp}"
        if text not in seen:
            seen.append(text)
    if seen:
        return human_safe("; ".join(seen))
    if p:
        return "; ".join(params_text(p))
    return "as its check decides (aiaudit explain)"


def _fix_lines(results: list[Result]) -> list[str]:
    """What the fix writes and runs, from the probe's failing results."""
    lines: list[str] = []
    for r in results:
        rem = r.remediation
        if r.status is not Status.FAIL or rem is None:
            continue
        block = [f"  {human_safe(rem.summary)}"]
        for s in rem.snippets:
            block += _snippet_lines(s)
        if rem.manual:
            block.append(f"  by hand: {human_safe(rem.manual)}")
        if "\n".join(block) not in "\n".join(lines):
            lines += block
    return lines


def _snippet_lines(s: Snippet) -> list[str]:
    """One snippet of a fix as a person reads it: the file it writes (and its mode when not
    the default), the unit it enables or masks, the edit, or the command."""
    if s.kind == SnippetKind.FILE:
        mode = f" (mode {s.mode:04o})" if s.mode != DEFAULT_FILE_MODE else ""
        return [f"  writes {human_safe(s.path or '')}{mode}:",
                *("    " + human_safe(ln) for ln in s.content.rstrip("\n").split("\n"))]
    if s.kind == SnippetKind.ENABLE:
        return [f"  enables at boot: {human_safe(s.content)}"]
    if s.kind == SnippetKind.MASK:
        return [f"  masks: {human_safe(s.content)}"]
    if s.kind == SnippetKind.EDIT:
        return [f"  edits {human_safe(s.path or '')} in place: {human_safe(s.content)}"]
    # command, apply: what a person would type
    return ["  runs now:", *("    " + human_safe(ln) for ln in s.shell().split("\n"))]


WIDTH = 96
"""Prose is wrapped to this width (at words); commands and file contents never are."""


def _para(text: str, indent: str = "  ") -> str:
    return textwrap.fill(human_safe(" ".join(text.split())), WIDTH, initial_indent=indent,
                         subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def explain(rs: Ruleset, rule_id: str, deadline: Deadline | None = None) -> str:
    """The text of ``aiaudit explain RULE_ID`` (its probe within ``deadline``)."""
    rule = find_rule(rs, rule_id)
    i = rule.info
    results = probe(rs, [rule], deadline).get(rule.id, [])
    out = [f"{i.id}: {human_safe(i.title)}",
           f"severity: {i.severity.value}   check: {i.check}   ruleset: {rs.name} "
           f"{rs.version}"]
    if i.tags:
        out.append(f"tags: {', '.join(i.tags)}")
    if i.rationale:
        out += ["", "Why it matters:", _para(i.rationale)]
    out += ["", "What it checks:", _para(rule.check.title + ".")]
    if rule.check.description:
        out.append(_para(rule.check.description))
    out.append(f"  expected: {expected_text(rule, results)}")
    out += ["  params:", *("    " + ln for ln in params_text(rule.params))]
    out.append(f"  scan modes: {', '.join(rule.check.modes)}")
    out += ["", "How to fix:"]
    if i.remediation:
        out.append(_para(i.remediation))
    fix = _fix_lines(results)
    if fix:
        out.append("  On a host where nothing sets it, the fix is:")
        out += ["  " + ln for ln in fix]
        out.append(_para("(a scan prints the fix for the host it scanned; `aiaudit "
                         "remediate` writes it as files and a script)"))
    elif not i.remediation:
        out.append(_para("Each failing result carries its own fix for the host scanned "
                         "(files to drop in, commands); see the scan report or `aiaudit "
                         "remediate`."))
    if i.references:
        out += ["", "References:", *(f"  - {human_safe(ref)}" for ref in i.references)]
    return "\n".join(out) + "\n"


def rules_table(rs: Ruleset, tags: Sequence[str] = (), deadline: Deadline | None = None
                ) -> str:
    """The text of ``aiaudit rules``: id, severity, expected value and title of each rule,
    only those carrying one of ``tags`` (case-insensitive) when given (the probe within
    ``deadline``)."""
    want = {t.lower() for t in tags}
    known = sorted({t for r in rs.rules for t in r.info.tags})
    unknown = sorted(want - {t.lower() for t in known})
    if unknown:
        raise UsageError(f"unknown tag {', '.join(unknown)} in ruleset {rs.name} "
                         f"(tags: {', '.join(known)})")
    rules = [r for r in rs.rules if not want or want & {t.lower() for t in r.info.tags}]
    probed = probe(rs, rules, deadline)
    rows = [(r.id, r.info.severity.value, expected_text(r, probed.get(r.id, [])),
             human_safe(r.info.title)) for r in rules]
    sel = f" tagged {', '.join(sorted(want))}" if want else ""
    out = [f"# {rs.name} {rs.version}: {len(rules)} of {len(rs.rules)} rules{sel}"]
    wid = max((len(r[0]) for r in rows), default=4)
    wexp = min(max((len(r[2]) for r in rows), default=8), 48)
    out.append(f"{'RULE':<{wid}}  {'SEVERITY':<8}  {'EXPECTED':<{wexp}}  TITLE")
    for rid, sev, exp, title in rows:
        out.append(f"{rid:<{wid}}  {sev:<8}  {exp:<{wexp}}  {title}")
    return "\n".join(out) + "\n"

