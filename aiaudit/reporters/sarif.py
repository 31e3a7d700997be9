"""``sarif`` reporter: SARIF 2.1.0 for GitHub code scanning and other SARIF consumers.

Identity (what keeps one alert one alert across runs):

- ``runAutomationDetails.id``, the code-scanning category, is ``aiaudit/<ruleset>/<name>/``
  where the name is the image *name* for an offline scan of a golden image and the hostname
  otherwise (:func:`aiaudit.core.identity.scan_name`): never the image version or build, which go
  in ``run.properties.host``.  ``--sarif-category TEXT`` replaces it; GitHub's upload-sarif
  ``category:`` input cannot, because the file already has an id.
- ``partialFingerprints`` hash rule, scan name and subject (plus the occurrence when one rule
  yields several results for one subject).  Subjects never contain line numbers; the line
  is in the location.

Content:

- ``message.text`` is the finding itself (never starting with the rule id: sarif-tools cuts
  that prefix off), then the expected and actual values, the evidence and the fix.
- The primary location is the file in the scanned root that decided (``region.startLine``
  at the deciding line): the file evidence the message names, else the first with a line,
  else live state that was read (``/proc``, ``/sys``; sysfs and ``/proc/sys`` files hold one
  value on one line), else the program that was run, else the root's ``os-release`` (the
  finding is about the host as a whole: a compiled-in default decided).  Other evidence
  files are ``relatedLocations``; a file a fix would create is never a location but a
  ``fixes[]`` entry.  URIs are relative to ``ROOT`` (the scanned root) and never carry a
  ``:line`` suffix.
- ``rules[].help`` is generic (title, rationale, the ruleset's fix text); what to change on
  this host is in each result's message, because GitHub keeps one help text per rule.
- ``security-severity`` is set only on rules tagged ``security``: GitHub shows the security
  scale for those and the ``level`` (error / warning / note) for the others (performance,
  reliability, availability), so one rule never shows on two scales.
- Waived failures are not results: GitHub code scanning ignores SARIF ``suppressions`` (a
  suppressed result is an open alert) and so does sarif-tools, while a result left out of a
  category's next upload closes its alert.  Each waived failure is a tool execution
  notification with the waiver's reason, owner and expiry, and is counted in
  ``run.properties.summary``.
- Passed results are left out too; rules that did not apply (skip) or could not be
  evaluated (error) are notifications, so nothing that did not fail shows up as an alert.

Reference: OASIS SARIF 2.1.0 (errata 01); GitHub "SARIF support for code scanning".
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping
from urllib.parse import quote

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.core.escape import text_safe
from aiaudit.core.model import (
    Evidence,
    Finding,
    RuleInfo,
    Severity,
    SnippetKind,
    Status,
    sorted_findings,
)
from aiaudit.reporters._common import fingerprint, host_label, remediation_text, safe_id

SCHEMA_URI = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
              "sarif-schema-2.1.0.json")
INFORMATION_URI = "https://pypi.org/project/aiaudit/"
"""Where users learn about the tool (``tool.driver.informationUri``): its package page."""

SECURITY_SEVERITY = {
    # GitHub: > 9.0 critical, 7.0-8.9 high, 4.0-6.9 medium, 0.1-3.9 low.
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MEDIUM: "5.5",
    Severity.LOW: "3.0",
    Severity.INFO: "0.0",
}
SECURITY_TAG = "security"
"""Only rules with this tag get ``security-severity`` (GitHub's security scale)."""
LEVEL = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
    Severity.INFO: "note",
}
FINGERPRINT_KEY = "aiaudit/v1"
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-5][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-"
                   r"[0-9a-fA-F]{12}$")
_LINE_SUFFIX = re.compile(r"^(/.+):([1-9][0-9]*)$")
_ONE_VALUE_FILES = ("/proc/sys/", "/sys/")
"""Live state files that hold one value on one line (sysfs: "one value per file")."""


def automation_id(run: RunResult, category: str | None = None) -> str:
    """The code-scanning category: ``category`` when given (with a final ``/``, as
    upload-sarif adds to its ``category:`` input: the part after the last ``/`` of an id
    names one run, not the category), else one per ruleset and host or image name (never
    its version or build)."""
    if category:
        return category if category.endswith("/") else category + "/"
    return f"aiaudit/{safe_id(run.ruleset)}/{safe_id(host_label(run))}/"


def _rule_descriptor(info: RuleInfo) -> dict[str, Any]:
    """The reportingDescriptor of a rule: the same for every host."""
    full = info.rationale.strip() or info.title
    help_text = [info.title, "", full]
    help_md = [f"**{info.title}**", "", full]
    if info.remediation:
        help_text += ["", "Fix: " + info.remediation.strip()]
        help_md += ["", "**Fix:** " + info.remediation.strip()]
    else:
        help_text += ["", "Fix: each failing result carries the fix for its host (files to "
                      "drop in and commands) in its message; `aiaudit remediate` bundles them."]
        help_md += ["", "**Fix:** each failing result carries the fix for its host (files to "
                    "drop in and commands) in the alert; `aiaudit remediate` bundles them."]
    if info.references:
        help_text += ["", "References:", *(f"- {r}" for r in info.references)]
        help_md += ["", "**References:**", "", *(f"- {r}" for r in info.references)]
    props: dict[str, Any] = {"severity": info.severity.value, "check": info.check,
                             "tags": sorted({"aiaudit", *info.tags})}
    if SECURITY_TAG in info.tags:
        props["security-severity"] = SECURITY_SEVERITY[info.severity]
    d: dict[str, Any] = {
        "id": info.id,
        "name": info.id.title().replace("-", ""),
        "shortDescription": {"text": info.title},
        "fullDescription": {"text": full},
        "help": {"text": "\n".join(help_text), "markdown": "\n".join(help_md)},
        "defaultConfiguration": {"level": LEVEL[info.severity]},
        "properties": props,
    }
    web = [r for r in info.references if r.startswith(("https://", "http://"))]
    if web:
        d["helpUri"] = web[0]
    return d


def _split_line(e: Evidence) -> tuple[str, int | None]:
    """The evidence's (path, line); ``/proc/net/tcp:2`` (a line written into a live path)
    is (``/proc/net/tcp``, 2)."""
    path, line = e.path or e.source, e.line
    m = _LINE_SUFFIX.match(path) if e.kind == "runtime" else None
    if m and line is None:
        return m.group(1), int(m.group(2))
    return path, line


def deciding_evidence(f: Finding) -> Evidence | None:
    """The evidence that decided the result, when it names an existing file or live path.

    Checks name the deciding source in their message (``... (from etc/security/limits.d/
    90-x.conf:3)``), ahead of context such as the ``UsePAM`` line that made pam_limits
    apply.  So the evidence the message names first decides: a file or live path is the
    location; a default or a command named there means no file decided (``None``: the
    context lines are only related locations).  When the message names none: the first
    file evidence with a line, then any file evidence, then live state that was read.
    """
    ev = list(f.result.evidence)
    msg = f.result.message
    named = sorted((e for e in ev if e.source and e.source in msg),
                   key=lambda e: msg.index(e.source))
    if named:
        first = named[0]
        return first if first.kind in ("file", "runtime") and first.path else None
    files = [e for e in ev if e.kind == "file" and e.path]
    for group in ([e for e in files if e.line is not None], files,
                  [e for e in ev if e.kind == "runtime" and e.path]):
        if group:
            return group[0]
    return None


def _location_path(f: Finding, os_release: str | None) -> tuple[str, int | None]:
    """The primary location (path on the host, line), see the module docstring."""
    e = deciding_evidence(f)
    if e is not None and e.path:
        path, line = _split_line(e)
        if line is None and e.kind == "runtime" and path.startswith(_ONE_VALUE_FILES):
            line = 1
        return path, line
    for c in f.result.evidence:
        if c.kind == "command" and c.source.startswith("/"):
            return c.source.split()[0], None
    if os_release:
        return os_release, None
    return "/", None   # a root without os-release: the root itself


def _physical(path: str, line: int | None) -> dict[str, Any]:
    phys: dict[str, Any] = {"artifactLocation": {"uri": _uri(path), "uriBaseId": "ROOT"}}
    if line is not None and line >= 1:
        phys["region"] = {"startLine": line}
    return phys


def _locations(f: Finding, os_release: str | None) -> list[dict[str, Any]]:
    return [{"physicalLocation": _physical(*_location_path(f, os_release)),
             "logicalLocations": [{"name": f.result.subject, "kind": "object"}]}]


def _related(f: Finding) -> list[dict[str, Any]]:
    """The other evidence files (context and lines that lost), one related location each."""
    primary = deciding_evidence(f)
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, int | None]] = set()
    for e in f.result.evidence:
        if e is primary or not e.path or e.kind not in ("file", "runtime"):
            continue
        path, line = _split_line(e)
        if (path, line) in seen:
            continue
        seen.add((path, line))
        rel: dict[str, Any] = {"id": len(out) + 1, "physicalLocation": _physical(path, line)}
        if e.value is not None:
            rel["message"] = {"text": e.value}
        out.append(rel)
    return out


def _fixes(f: Finding) -> list[dict[str, Any]]:
    """Files the fix drops in, as SARIF fixes (the file is inserted whole)."""
    rem = f.result.remediation
    if rem is None:
        return []
    changes = [{"artifactLocation": {"uri": _uri(s.path), "uriBaseId": "ROOT"},
                "replacements": [{"deletedRegion": {"startLine": 1, "startColumn": 1,
                                                    "endLine": 1, "endColumn": 1},
                                  "insertedContent": {"text": s.content}}]}
               for s in rem.snippets if s.kind == SnippetKind.FILE and s.path]
    if not changes:
        return []
    return [{"description": {"text": rem.summary}, "artifactChanges": changes}]


def _uri(path: str) -> str:
    """A relative URI reference (GitHub wants relative paths) for a host path.  A colon
    is kept as is except in the first segment, where it would read as a scheme."""
    segments = text_safe(path).lstrip("/").split("/")
    out = [quote(seg, safe="@+,;=-._~" + (":" if i else "")) for i, seg in enumerate(segments)]
    return "/".join(out) or "."


def _message(f: Finding) -> str:
    r = f.result
    first = r.message if r.subject in r.message else f"{r.subject}: {r.message}"
    parts = [first]
    if r.expected is not None or r.actual is not None:
        parts.append(f"Expected {r.expected}, found {r.actual}.")
    for e in r.evidence:
        val = f" = {e.value}" if e.value is not None else ""
        parts.append(f"Evidence: {e.source}{val}")
    fix = remediation_text(f)
    if fix:
        parts.append("Fix: " + fix)
    return "\n".join(parts)


def _occurrences(findings: list[Finding]) -> list[int]:
    """For each finding, how many earlier findings share its rule and subject."""
    seen: dict[tuple[str, str], int] = {}
    out: list[int] = []
    for f in findings:
        k = (f.rule_id, f.result.subject)
        out.append(seen.get(k, 0))
        seen[k] = out[-1] + 1
    return out


def result_fingerprint(run: RunResult, f: Finding, occurrence: int = 0) -> str:
    """The ``partialFingerprints`` value: rule, scan name, subject (and the occurrence
    when a rule yields several results for one subject)."""
    base = fingerprint(run, f)
    if not occurrence:
        return base
    import hashlib

    return hashlib.sha256(f"{base}#{occurrence}".encode()).hexdigest()


def _result(run: RunResult, f: Finding, index: dict[str, int], occurrence: int
            ) -> dict[str, Any]:
    r = f.result
    d: dict[str, Any] = {
        "ruleId": f.rule_id,
        "kind": "fail",
        "level": LEVEL[f.severity],
        "message": {"text": _message(f)},
        "locations": _locations(f, run.host.os_release_path),
        "partialFingerprints": {FINGERPRINT_KEY: result_fingerprint(run, f, occurrence)},
        "properties": {
            "subject": r.subject,
            "severity": f.severity.value,
            "status": f.status.value,
            **({"aspect": r.aspect.value} if r.aspect else {}),
            **({"expected": r.expected} if r.expected is not None else {}),
            **({"actual": r.actual} if r.actual is not None else {}),
        },
    }
    related = _related(f)
    if related:
        d["relatedLocations"] = related
    fixes = _fixes(f)
    if fixes:
        d["fixes"] = fixes
    if f.rule_id in index:
        d["ruleIndex"] = index[f.rule_id]
    return d


def _notification(f: Finding, index: dict[str, int]) -> dict[str, Any]:
    r = f.result
    props: dict[str, Any] = {"subject": r.subject, "status": f.status.value}
    if f.status is Status.WAIVED:
        assert f.waiver is not None
        w = f.waiver
        what = (f"failed and is waived until {w.expires} (owner {w.owner}): {w.reason}; "
                "finding")
        props["waiver"] = {"reason": w.reason, "owner": w.owner, "expires": w.expires,
                           **({"source": w.source} if w.source else {})}
        level = "note"
    else:
        what = "not applicable" if r.status is Status.SKIP else "could not be evaluated"
        level = "error" if r.status is Status.ERROR else "note"
    d: dict[str, Any] = {
        "level": level,
        "message": {"text": f"{f.rule_id} [{r.subject}] {what}: {r.message}"},
        "descriptor": {"id": "aiaudit/" + f.status.value},
        "associatedRule": {"id": f.rule_id},
        "properties": props,
    }
    if f.rule_id in index:
        d["associatedRule"]["index"] = index[f.rule_id]
    return d


def sarif_log(run: RunResult, category: str | None = None) -> dict[str, Any]:
    """The SARIF log object for ``run`` (``category``: ``--sarif-category``)."""
    infos = list(run.rules)
    known = {i.id for i in infos}
    for f in run.findings:  # results of rules the run does not describe (hand-made input)
        if f.rule_id not in known:
            known.add(f.rule_id)
            infos.append(RuleInfo(id=f.rule_id, check=f.check, severity=f.severity,
                                  title=f.title))
    index = {info.id: i for i, info in enumerate(infos)}
    findings = sorted_findings(run)
    failed = [f for f in findings if f.status is Status.FAIL]
    occurrence = _occurrences(failed)
    results = [_result(run, f, index, n) for f, n in zip(failed, occurrence, strict=True)]
    notes = [_notification(f, index) for f in findings
             if f.status in (Status.WAIVED, Status.SKIP, Status.ERROR)]
    notes += [{"level": "warning", "message": {"text": n}} for n in run.notices]
    h = run.host
    invocation: dict[str, Any] = {
        "executionSuccessful": True,
        "startTimeUtc": run.started,
        "machine": h.hostname,
        "toolExecutionNotifications": notes,
        "properties": {"mode": h.mode, "root": h.root, "duration_s": run.duration_s,
                       "fail_on": run.fail_on.value},
    }
    automation: dict[str, Any] = {"id": automation_id(run, category)}
    if _UUID.match(run.run_id):
        automation["guid"] = run.run_id.lower()
    root_uri = "file://" + quote(text_safe(h.root.rstrip("/") + "/"), safe="/@+,;=-._~")
    sarif_run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "aiaudit",
            "fullName": f"aiaudit {run.tool_version} (Linux host audit for deep-learning "
                        "training)",
            "version": run.tool_version,
            "semanticVersion": run.tool_version,
            "informationUri": INFORMATION_URI,
            "rules": [_rule_descriptor(i) for i in infos],
        }},
        "automationDetails": automation,
        "invocations": [invocation],
        "originalUriBaseIds": {"ROOT": {"uri": root_uri,
                                        "description": {"text": "the scanned root"}}},
        "results": results,
        "properties": {
            "run_id": run.run_id,
            "host": {"name": host_label(run), "hostname": h.hostname,
                     "machine_id": h.machine_id, "product_uuid": h.product_uuid,
                     "image_id": h.image_id, "image_name": h.image_name,
                     "image_version": h.image_version, "image_build": h.image_build,
                     "os": h.os_name, "kernel": h.kernel},
            "ruleset": {"name": run.ruleset, "version": run.ruleset_version},
            "summary": run.counts(),
        },
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [sarif_run]}


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """The run as one SARIF 2.1.0 document (option ``sarif_category``: the category)."""
    text = json.dumps(sarif_log(run, options.get("sarif_category")), indent=2,
                      ensure_ascii=False)
    return text_safe(text) + "\n"


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``sarif`` format."""
    return [ReporterSpec("sarif", render, "SARIF 2.1.0 (GitHub code scanning)", "sarif")]
