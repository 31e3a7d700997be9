"""``events`` reporter: JSON lines for SIEMs, one event per result plus one run summary.

Each line is a self-contained JSON object valid against ``schemas/event.schema.json``:
host identity (hostname, machine id, DMI product UUID when readable, image id), run id,
timestamp (the scan start, so every event of one run sorts together), ruleset, rule,
severity, status, subject, message, evidence, and the waiver when one applied.

With ``--changes-since`` / ``--state`` only changed results are events, and each says how
it changed: ``change`` (``added``, ``fixed``, ``changed``, or ``gone`` for the closing event
of a failure whose subject disappeared, e.g. a listener that went away) and
``previous_status``; without them both are ``null``.  The last line (``"event":
"summary"``) carries the whole scan's ``counts`` (what the exit code reflects, also when no
result changed) and, on a changes run, the change counts apart in ``changes``, so a SIEM
sees that a run happened even when it produced no result.  ``aiaudit scan --syslog`` sends
the same lines to syslog.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.core.escape import text_safe
from aiaudit.core.model import Finding, sorted_findings
from aiaudit.core.serialize import evidence_dict, waiver_dict
from aiaudit.reporters._common import fingerprint

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
        "change": None,
        "previous_status": None,
    })
    change = r.data.get("change") if isinstance(r.data, Mapping) else None
    if isinstance(change, Mapping):
        ev["change"] = change.get("kind")
        ev["previous_status"] = change.get("previous_status")
    if r.remediation is not None:
        ev["remediation"] = r.remediation.summary
    if f.waiver is not None:
        ev["waiver"] = waiver_dict(f.waiver)
    return ev


def summary_event(run: RunResult) -> dict[str, Any]:
    """The closing event of a run: counts, duration, notices."""
    ev = _base(run, "summary")
    cs = run.change_summary
    ev.update({"duration_s": run.duration_s, "fail_on": run.fail_on.value,
               "rules": len(run.rules),
               "counts": dict(cs["scan_counts"]) if cs else run.counts(),
               "notices": list(run.notices)})
    if cs:
        ev["changes"] = dict(cs["changes"])
        ev["since"] = cs["since"]
        ev["previous_run"] = cs["previous_run"]
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
