"""``sarif`` reporter: SARIF 2.1.0 for GitHub code scanning and other SARIF consumers.

- Every rule of the run is a ``reportingDescriptor`` with short and full descriptions,
  ``help`` (text and markdown, with the fix), ``properties.security-severity`` (GitHub's
  numeric scale) and tags.
- Failures (and waived failures, with an external ``suppression``) are results at a physical
  location: the deciding file relative to the scanned root with its line, or the ``/proc``
  or ``/sys`` path for live state (``uriBaseId`` ``ROOT`` is the scanned root).
- ``partialFingerprints`` hash rule, host and subject, so one problem keeps one alert
  across runs; ``runAutomationDetails.id`` (``aiaudit/<ruleset>/<host or image>/``) puts
  each host and image in its own code-scanning category.
- Passed results are left out (GitHub does not document ``kind`` and could show them as
  alerts; an alert closes when a later run of its category no longer reports it); rules
  that did not apply (skip) and could not be evaluated (error) are tool execution
  notifications, so nothing that did not fail shows up as an alert.

Reference: OASIS SARIF 2.1.0 (errata 01); GitHub "SARIF support for code scanning".
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping
from urllib.parse import quote

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.model import Evidence, Finding, RuleInfo, Severity, Status
from aiaudit.reporters._common import (
    fingerprint,
    host_label,
    remediation_text,
    safe_id,
    sorted_findings,
    text_safe,
)

SCHEMA_URI = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
              "sarif-schema-2.1.0.json")

SECURITY_SEVERITY = {
    # GitHub: > 9.0 critical, 7.0-8.9 high, 4.0-6.9 medium, 0.1-3.9 low.
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MEDIUM: "5.5",
    Severity.LOW: "3.0",
    Severity.INFO: "0.0",
}
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


def automation_id(run: RunResult) -> str:
    """The code-scanning category: one per ruleset and host (or image)."""
    return f"aiaudit/{safe_id(run.ruleset)}/{safe_id(host_label(run))}/"


def _rule_descriptor(info: RuleInfo, example: Finding | None = None) -> dict[str, Any]:
    """The reportingDescriptor of a rule; ``example`` is a failure of the rule in this
    run whose fix is shown in the help."""
    full = info.rationale.strip() or info.title
    help_text = [info.title, "", full]
    help_md = [f"**{info.title}**", "", full]
    if info.remediation:
        help_text += ["", "Fix: " + info.remediation.strip()]
        help_md += ["", "**Fix:** " + info.remediation.strip()]
    elif example is not None:
        subject = example.result.subject
        help_text += ["", f"Fix (for {subject} on this host): "
                      + remediation_text(example)]
        help_md += ["", f"**Fix** (for `{subject}` on this host): "
                    + remediation_text(example, markdown=True)]
    else:
        help_text += ["", "Fix: each failing result carries its own fix (files to drop in and "
                      "commands), see the result message; `aiaudit remediate` bundles them."]
        help_md += ["", "**Fix:** each failing result carries its own fix (files to drop in "
                    "and commands), shown in the alert; `aiaudit remediate` bundles them."]
    if info.references:
        help_text += ["", "References:", *(f"- {r}" for r in info.references)]
        help_md += ["", "**References:**", "", *(f"- {r}" for r in info.references)]
    d: dict[str, Any] = {
        "id": info.id,
        "name": info.id.title().replace("-", ""),
        "shortDescription": {"text": info.title},
        "fullDescription": {"text": full},
        "help": {"text": "\n".join(help_text), "markdown": "\n".join(help_md)},
        "defaultConfiguration": {"level": LEVEL[info.severity]},
        "properties": {
            "security-severity": SECURITY_SEVERITY[info.severity],
            "severity": info.severity.value,
            "check": info.check,
            "tags": sorted({"aiaudit", *info.tags}),
        },
    }
    web = [r for r in info.references if r.startswith(("https://", "http://"))]
    if web:
        d["helpUri"] = web[0]
    return d


def _location_path(f: Finding) -> tuple[str, int | None]:
    """The path that decided (file first, then live state), else where the fix goes,
    else the subject or the program run, else a stable pseudo-path for the rule.

    GitHub rejects the whole upload when one result lacks a physical location
    ("locationFromSarifResult: expected at least one location" / "expected artifact
    location"), so there always is one.
    """
    ev: list[Evidence] = list(f.result.evidence)
    for kind in ("file", "runtime"):
        for e in ev:
            if e.kind == kind and e.path:
                return e.path, e.line
    rem = f.result.remediation
    for s in rem.snippets if rem else ():
        if s.kind == "file" and s.path:
            return s.path, None
    if f.result.subject.startswith("/"):
        return f.result.subject, None
    for e in ev:
        if e.kind == "command" and e.source.startswith("/"):
            return e.source.split()[0], None
    return f"aiaudit/rules/{f.rule_id}", None


def _locations(f: Finding) -> list[dict[str, Any]]:
    path, line = _location_path(f)
    phys: dict[str, Any] = {"artifactLocation": {"uri": _uri(path), "uriBaseId": "ROOT"}}
    if line is not None and line >= 1:
        phys["region"] = {"startLine": line}
    return [{"physicalLocation": phys,
             "logicalLocations": [{"name": f.result.subject, "kind": "object"}]}]


def _uri(path: str) -> str:
    """A relative URI reference (GitHub wants relative paths) for a host path."""
    return quote(text_safe(path).lstrip("/"), safe="/@+,;=-._~") or "."


def _message(f: Finding) -> str:
    r = f.result
    parts = [f"{f.rule_id} [{r.subject}]: {r.message}"]
    if r.expected is not None or r.actual is not None:
        parts.append(f"Expected {r.expected}, found {r.actual}.")
    for e in r.evidence:
        val = f" = {e.value}" if e.value is not None else ""
        parts.append(f"Evidence: {e.source}{val}")
    fix = remediation_text(f)
    if fix:
        parts.append("Fix: " + fix)
    return "\n".join(parts)


def _result(run: RunResult, f: Finding, index: dict[str, int]) -> dict[str, Any]:
    r = f.result
    d: dict[str, Any] = {
        "ruleId": f.rule_id,
        "kind": "fail",
        "level": LEVEL[f.severity],
        "message": {"text": _message(f)},
        "locations": _locations(f),
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(run, f)},
        "properties": {
            "subject": r.subject,
            "severity": f.severity.value,
            "status": f.status.value,
            **({"aspect": r.aspect.value} if r.aspect else {}),
            **({"expected": r.expected} if r.expected is not None else {}),
            **({"actual": r.actual} if r.actual is not None else {}),
        },
    }
    if f.rule_id in index:
        d["ruleIndex"] = index[f.rule_id]
    if f.waiver is not None:
        w = f.waiver
        d["suppressions"] = [{
            "kind": "external",
            "status": "accepted",
            "justification": w.reason,
            "properties": {"owner": w.owner, "expires": w.expires,
                           **({"source": w.source} if w.source else {})},
        }]
    return d


def _notification(f: Finding, index: dict[str, int]) -> dict[str, Any]:
    r = f.result
    what = "not applicable" if r.status is Status.SKIP else "could not be evaluated"
    d: dict[str, Any] = {
        "level": "error" if r.status is Status.ERROR else "note",
        "message": {"text": f"{f.rule_id} [{r.subject}] {what}: {r.message}"},
        "descriptor": {"id": "aiaudit/" + r.status.value},
        "associatedRule": {"id": f.rule_id},
        "properties": {"subject": r.subject, "status": r.status.value},
    }
    if f.rule_id in index:
        d["associatedRule"]["index"] = index[f.rule_id]
    return d


def sarif_log(run: RunResult) -> dict[str, Any]:
    """The SARIF log object for ``run``."""
    infos = list(run.rules)
    known = {i.id for i in infos}
    for f in run.findings:  # results of rules the run does not describe (hand-made input)
        if f.rule_id not in known:
            known.add(f.rule_id)
            infos.append(RuleInfo(id=f.rule_id, check=f.check, severity=f.severity,
                                  title=f.title))
    index = {info.id: i for i, info in enumerate(infos)}
    examples: dict[str, Finding] = {}
    for f in run.findings:
        if f.status in (Status.FAIL, Status.WAIVED) and f.result.remediation is not None:
            examples.setdefault(f.rule_id, f)
    findings = sorted_findings(run)
    results = [_result(run, f, index) for f in findings
               if f.status in (Status.FAIL, Status.WAIVED)]
    notes = [_notification(f, index) for f in findings
             if f.status in (Status.SKIP, Status.ERROR)]
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
    automation: dict[str, Any] = {"id": automation_id(run)}
    if _UUID.match(run.run_id):
        automation["guid"] = run.run_id.lower()
    root_uri = "file://" + quote(text_safe(h.root.rstrip("/") + "/"), safe="/@+,;=-._~")
    sarif_run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "aiaudit",
            "version": run.tool_version,
            "rules": [_rule_descriptor(i, examples.get(i.id)) for i in infos],
        }},
        "automationDetails": automation,
        "invocations": [invocation],
        "originalUriBaseIds": {"ROOT": {"uri": root_uri,
                                        "description": {"text": "the scanned root"}}},
        "results": results,
        "properties": {
            "run_id": run.run_id,
            "host": {"hostname": h.hostname, "machine_id": h.machine_id,
                     "product_uuid": h.product_uuid, "image_id": h.image_id,
                     "os": h.os_name, "kernel": h.kernel},
            "ruleset": {"name": run.ruleset, "version": run.ruleset_version},
            "summary": run.counts(),
        },
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [sarif_run]}


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """The run as one SARIF 2.1.0 document."""
    text = json.dumps(sarif_log(run), indent=2, ensure_ascii=False)
    return text_safe(text) + "\n"


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``sarif`` format."""
    return [ReporterSpec("sarif", render, "SARIF 2.1.0 (GitHub code scanning)", "sarif")]
