"""``events`` reporter: JSON lines for SIEMs, one event per result plus one run summary.

Each line is a self-contained JSON object valid against ``schemas/event.schema.json``:
host identity (hostname, machine id, DMI product UUID when readable, image id), run id,
timestamp (the scan start, so every event of one run sorts together), ruleset, rule,
severity, status, subject, message, evidence, and the waiver when one applied.  The last
line (``"event": "summary"``) carries the counts, so a SIEM sees that a run happened even
when it produced no result.  ``aiaudit scan --syslog`` sends the same lines to syslog.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.model import Finding
from aiaudit.reporters._common import fingerprint, sorted_findings, text_safe
from aiaudit.serialize import evidence_dict, waiver_dict

EVENT_SCHEMA = "aiaudit.event/1"


def _base(run: RunResult, event: str) -> dict[str, Any]:
    h = run.host
    return {
        "schema": EVENT_SCHEMA,
        "event": event,
        "timestamp": run.started,
        "run_id": run.run_id,
        "host": {"hostname": h.hostname, "machine_id": h.machine_id,
                 "product_uuid": h.product_uuid, "image_id": h.image_id,
                 "os": h.os_name, "kernel": h.kernel, "mode": h.mode, "root": h.root},
        "ruleset": run.ruleset,
        "ruleset_version": run.ruleset_version,
        "tool_version": run.tool_version,
    }


def result_event(run: RunResult, f: Finding) -> dict[str, Any]:
    """The event for one finding."""
    r = f.result
    ev = _base(run, "result")
    ev.update({
        "rule": f.rule_id,
        "check": f.check,
        "title": f.title,
        "severity": f.severity.value,
        "status": f.status.value,
        "subject": r.subject,
        "aspect": r.aspect.value if r.aspect else None,
        "message": r.message,
        "expected": r.expected,
        "actual": r.actual,
        "evidence": [evidence_dict(e) for e in r.evidence],
        "fingerprint": fingerprint(run, f),
    })
    if r.remediation is not None:
        ev["remediation"] = r.remediation.summary
    if f.waiver is not None:
        ev["waiver"] = waiver_dict(f.waiver)
    return ev


def summary_event(run: RunResult) -> dict[str, Any]:
    """The closing event of a run: counts, duration, notices."""
    ev = _base(run, "summary")
    ev.update({"duration_s": run.duration_s, "fail_on": run.fail_on.value,
               "rules": len(run.rules), "counts": run.counts(), "notices": list(run.notices)})
    return ev


def events(run: RunResult) -> list[dict[str, Any]]:
    """Every event of the run, summary last."""
    return [*(result_event(run, f) for f in sorted_findings(run)), summary_event(run)]


def dumps(event: Mapping[str, Any]) -> str:
    """One event as one line of JSON (UTF-8 safe, no newline inside)."""
    return text_safe(json.dumps(event, ensure_ascii=False, separators=(",", ":")))


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """The run as JSON lines."""
    return "".join(dumps(e) + "\n" for e in events(run))


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``events`` format."""
    return [ReporterSpec("events", render, "JSON lines for SIEMs (schemas/event.schema.json)",
                         "jsonl")]
