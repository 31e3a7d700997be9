# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""RunResult <-> plain JSON data (the ``json`` report format, version 1).

The JSON report is the canonical, lossless form of a scan: ``aiaudit render`` and
``--changes-since`` read it back with :func:`run_from_dict`.
"""

from __future__ import annotations

from typing import Any

from aiaudit.core.model import (
    DEFAULT_FILE_MODE,
    Aspect,
    Evidence,
    Finding,
    HostInfo,
    Remediation,
    Result,
    RuleInfo,
    RunResult,
    Severity,
    Snippet,
    SnippetKind,
    Status,
    Waiver,
)

SCHEMA_VERSION = "1.0"
TOOL = "aiaudit"


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def evidence_dict(e: Evidence) -> dict[str, Any]:
    """JSON form of one evidence item."""
    return _drop_none({"source": e.source, "kind": e.kind, "path": e.path, "line": e.line,
                       "value": e.value})


def snippet_dict(s: Snippet) -> dict[str, Any]:
    """JSON form of one snippet; a ``file`` snippet carries its mode in octal (``"0644"``)."""
    mode = f"{s.mode:04o}" if s.kind == SnippetKind.FILE else None
    return _drop_none({"kind": str(s.kind), "path": s.path, "mode": mode,
                       "content": s.content, "description": s.description or None})


def snippet_from_dict(d: dict[str, Any]) -> Snippet:
    """A snippet from its JSON form (inverse of :func:`snippet_dict`)."""
    mode = int(d["mode"], 8) if "mode" in d else DEFAULT_FILE_MODE
    return Snippet(kind=SnippetKind(d["kind"]), content=d["content"], path=d.get("path"),
                   description=d.get("description", ""), mode=mode)


def remediation_dict(r: Remediation | None) -> dict[str, Any] | None:
    """JSON form of a remediation (``None`` stays ``None``)."""
    if r is None:
        return None
    out: dict[str, Any] = {
        "summary": r.summary,
        "snippets": [snippet_dict(s) for s in r.snippets],
    }
    if r.manual:
        out["manual"] = r.manual
    if r.followup:
        out["followup"] = r.followup
    if r.provisioner:
        out["provisioner"] = r.provisioner
    return out


def waiver_dict(w: Waiver | None) -> dict[str, Any] | None:
    """JSON form of a waiver."""
    if w is None:
        return None
    return _drop_none({"rule": w.rule, "subject": w.subject, "host": w.host, "reason": w.reason,
                       "owner": w.owner, "expires": w.expires, "source": w.source or None})


def finding_dict(f: Finding) -> dict[str, Any]:
    """JSON form of one finding (a result bound to its rule)."""
    r = f.result
    return _drop_none({
        "rule_id": f.rule_id,
        "check": f.check,
        "severity": f.severity.value,
        "title": f.title,
        "status": f.status.value,
        "check_status": r.status.value,
        "subject": r.subject,
        "message": r.message,
        "aspect": r.aspect.value if r.aspect else None,
        "expected": r.expected,
        "actual": r.actual,
        "evidence": [evidence_dict(e) for e in r.evidence],
        "remediation": remediation_dict(r.remediation),
        "waiver": waiver_dict(f.waiver),
        "data": dict(r.data) if r.data else None,
    })


def host_dict(h: HostInfo) -> dict[str, Any]:
    """JSON form of the host identity."""
    return {
        "hostname": h.hostname,
        "machine_id": h.machine_id,
        "product_uuid": h.product_uuid,
        "os": {"name": h.os_name, "id": h.os_id, "version": h.os_version},
        "kernel": h.kernel,
        "root": h.root,
        "mode": h.mode,
        "image_id": h.image_id,
        **{k: v for k, v in (("image_name", h.image_name), ("image_version", h.image_version),
                             ("image_build", h.image_build),
                             ("os_release_path", h.os_release_path),
                             ("image_kind", h.image_kind),
                             ("image_kind_reason", h.image_kind_reason)) if v is not None},
    }


def rule_dict(r: RuleInfo) -> dict[str, Any]:
    """JSON form of a rule's description."""
    return _drop_none({
        "id": r.id, "check": r.check, "severity": r.severity.value, "title": r.title,
        "rationale": r.rationale or None, "references": list(r.references),
        "tags": list(r.tags), "description": r.description or None,
        "remediation": r.remediation or None,
    })


def run_dict(run: RunResult) -> dict[str, Any]:
    """The whole JSON report document."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": TOOL, "version": run.tool_version},
        "run_id": run.run_id,
        "started": run.started,
        "duration_s": run.duration_s,
        "host": host_dict(run.host),
        "ruleset": _drop_none({"name": run.ruleset, "version": run.ruleset_version,
                               "source": run.ruleset_source or None}),
        "fail_on": run.fail_on.value,
        "summary": {"total": len(run.findings), "by_status": run.counts(),
                    "by_severity": run.counts_by_severity()},
        "notices": list(run.notices),
        **({"training_user": _drop_none({"name": run.training_user,
                                         "source": run.training_user_source})}
           if run.training_user else {}),
        **({"scan_summary": {"by_severity": {k: dict(v) for k, v in
                                             run.scan_counts.items()}}}
           if run.scan_counts is not None else {}),
        "rules": [rule_dict(r) for r in run.rules],
        "results": [finding_dict(f) for f in run.findings],
        **({"rule_durations": dict(run.rule_durations)} if run.rule_durations else {}),
        **({"changes": dict(run.change_summary)} if run.change_summary else {}),
    }


def run_from_dict(d: dict[str, Any]) -> RunResult:
    """Rebuild a RunResult from a JSON report (inverse of :func:`run_dict`)."""
    h = d["host"]
    host = HostInfo(hostname=h["hostname"], machine_id=h.get("machine_id"),
                    os_name=(h.get("os") or {}).get("name"), os_version=(h.get("os") or {})
                    .get("version"), os_id=(h.get("os") or {}).get("id"),
                    kernel=h.get("kernel"), root=h.get("root", "/"), mode=h.get("mode", "live"),
                    product_uuid=h.get("product_uuid"), image_id=h.get("image_id"),
                    image_name=h.get("image_name"), image_version=h.get("image_version"),
                    image_build=h.get("image_build"),
                    os_release_path=h.get("os_release_path"),
                    image_kind=h.get("image_kind"),
                    image_kind_reason=h.get("image_kind_reason"))
    rules = tuple(RuleInfo(id=r["id"], check=r["check"], severity=Severity(r["severity"]),
                           title=r["title"], rationale=r.get("rationale", ""),
                           references=tuple(r.get("references", ())),
                           tags=tuple(r.get("tags", ())), description=r.get("description", ""),
                           remediation=r.get("remediation", ""))
                  for r in d.get("rules", []))
    findings = []
    for f in d.get("results", []):
        rem = f.get("remediation")
        remediation = None
        if rem:
            remediation = Remediation(rem["summary"], tuple(
                snippet_from_dict(s) for s in rem.get("snippets", [])),
                manual=rem.get("manual", ""), followup=rem.get("followup", ""),
                provisioner=rem.get("provisioner", ""))
        ev = tuple(Evidence(source=e["source"], value=e.get("value"), path=e.get("path"),
                            line=e.get("line"), kind=e.get("kind", "file"))
                   for e in f.get("evidence", []))
        result = Result(status=Status(f.get("check_status", f["status"])),
                        subject=f["subject"], message=f["message"],
                        expected=f.get("expected"), actual=f.get("actual"),
                        aspect=Aspect(f["aspect"]) if f.get("aspect") else None,
                        evidence=ev, remediation=remediation, data=f.get("data") or {})
        w = f.get("waiver")
        waiver = Waiver(rule=w["rule"], reason=w["reason"], owner=w["owner"],
                        expires=w["expires"], subject=w.get("subject"), host=w.get("host"),
                        source=w.get("source", "")) if w else None
        findings.append(Finding(rule_id=f["rule_id"], check=f["check"],
                                severity=Severity(f["severity"]), title=f["title"],
                                result=result, waiver=waiver))
    return RunResult(tool_version=d["tool"]["version"], run_id=d["run_id"],
                     started=d["started"], duration_s=d["duration_s"], host=host,
                     ruleset=d["ruleset"]["name"], ruleset_version=d["ruleset"]["version"],
                     ruleset_source=d["ruleset"].get("source", ""),
                     rules=rules, findings=tuple(findings),
                     fail_on=Severity(d.get("fail_on", "high")),
                     notices=tuple(d.get("notices", ())),
                     training_user=(d.get("training_user") or {}).get("name"),
                     training_user_source=(d.get("training_user") or {}).get("source"),
                     scan_counts=(d.get("scan_summary") or {}).get("by_severity"),
                     rule_durations=dict(d.get("rule_durations") or {}),
                     change_summary=d.get("changes"))
