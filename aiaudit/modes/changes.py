"""``--changes-since PREVIOUS.json``: only the results whose status changed since a saved scan.

A timer that scans every hour would otherwise send a SIEM the same hundred lines every hour.
Results are matched by **rule id + subject** (a rule that yields several results for one
subject is matched by their order).  The aspect is not part of the key: a sysctl failure that
moves from ``drift`` to ``runtime`` is the same finding.  Kinds, from the point of view of
failures (the effective status, so ``waived`` counts as not failing):

``added``
    failing now and not in the previous scan: a new finding (a regression from ``pass``, an
    expired waiver, a newly covered subject or rule).
``fixed``
    failing before, passing (or not applicable) now.
``changed``
    any other status change: failure waived, an ``error`` appearing or clearing, a new
    result that does not fail...
``gone``
    failing (or waived, or not evaluated) before, and its subject is no longer reported by
    a rule that ran this time (a listener that went away, a removed device): the closing
    event a SIEM needs to close the incident.  It is shown as a ``skip`` result (the rule
    does not apply to a subject that no longer exists) with the previous result's rule,
    subject and evidence.  A gone result that passed before closes nothing and is only
    listed in a notice.

Each emitted result carries ``data["change"] = {"kind", "previous_status", "previous_run"}``
(``previous_status`` is ``null`` for a result that is new).  The reduced run keeps the
whole scan's counts beside the change counts in ``change_summary`` (a run with no change
still says the host has 9 failures), and a summary line is a run notice.  The exit code is
not affected: the CLI computes it from the full scan.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from aiaudit.core.errors import UsageError
from aiaudit.core.model import Finding, RunResult, Status
from aiaudit.core.startup.collector import after_import
from aiaudit.core.startup.records import record

CHANGE_KINDS = ("added", "fixed", "changed", "gone")
CLOSING_STATUSES = (Status.FAIL, Status.WAIVED, Status.ERROR)
"""A previous result with one of these statuses gets a ``gone`` result when its subject
disappears (something was open about it)."""
MAX_PREVIOUS_BYTES = 64 * 1024 * 1024
"""A previous scan larger than this is refused."""
MAX_GONE_LISTED = 10

Key = tuple[str, str, int]


@record
class Change:
    """One result whose status changed since the previous scan."""

    kind: str
    """``added``, ``fixed``, ``changed`` or ``gone``."""
    finding: Finding
    previous_status: Status | None
    """``None`` when the result was not in the previous scan."""


def keyed(findings: tuple[Finding, ...] | list[Finding]) -> dict[Key, Finding]:
    """Findings by (rule id, subject, occurrence) - the matching key across scans."""
    seen: Counter[tuple[str, str]] = Counter()
    out: dict[Key, Finding] = {}
    for f in findings:
        k = (f.rule_id, f.result.subject)
        out[(*k, seen[k])] = f
        seen[k] += 1
    return out


def classify(previous: Status | None, current: Status) -> str | None:
    """The change kind from ``previous`` (``None``: absent) to ``current``; ``None`` if the
    status did not change."""
    if previous is current:
        return None
    if current is Status.FAIL:
        return "added"
    if previous is Status.FAIL and current in (Status.PASS, Status.SKIP):
        return "fixed"
    return "changed"


def diff(previous: RunResult | None, current: RunResult
         ) -> tuple[list[Change], list[Finding], int]:
    """(changes in current order, previous findings that are gone, unchanged count);
    ``previous=None`` (no earlier scan) makes every result a change.  A previous result
    is *gone* when its rule ran this time but no longer yields its subject."""
    before = keyed(previous.findings) if previous is not None else {}
    now = keyed(current.findings)
    changes: list[Change] = []
    unchanged = 0
    for key, f in now.items():
        old = before.get(key)
        old_status = old.status if old is not None else None
        kind = classify(old_status, f.status)
        if kind is None:
            unchanged += 1
        else:
            changes.append(Change(kind, f, old_status))
    # A result is gone only if its rule ran this time (not when --only/--skip or another
    # ruleset left the rule out: that is "not compared", counted by changes_since).
    ran = {r.id for r in current.rules} | {f.rule_id for f in current.findings}
    gone = [f for key, f in before.items() if key not in now and f.rule_id in ran]
    return changes, gone, unchanged


def _mismatch_notices(previous: RunResult, current: RunResult, origin: str) -> list[str]:
    out = []
    p, c = previous.host, current.host
    same_host = (p.machine_id == c.machine_id if p.machine_id and c.machine_id
                 else p.hostname == c.hostname)
    if not same_host:
        out.append(f"{origin} is a scan of another host ({p.hostname}, machine id "
                   f"{p.machine_id or '?'}): changes are relative to it")
    if previous.ruleset != current.ruleset:
        out.append(f"{origin} used ruleset {previous.ruleset}, this scan "
                   f"{current.ruleset}: results of rules in only one of them show as "
                   "added or gone")
    return out


def gone_result(f: Finding) -> Finding:
    """The closing result for a previous finding whose subject is no longer reported."""
    r = f.result
    msg = (f"{r.subject} is no longer reported by {f.rule_id} (was {f.status.value}): the "
           "subject is gone")
    result = replace(r, status=Status.SKIP, message=msg, expected=None, actual=None,
                     remediation=None)
    return replace(f, result=result, waiver=None)


def changes_since(current: RunResult, previous: RunResult | None, origin: str) -> RunResult:
    """``current`` reduced to the results whose status changed since ``previous``, each
    marked in ``data["change"]``, plus a ``gone`` result for each previous failure whose
    subject disappeared, with the whole scan's and the change counts in
    ``change_summary`` and a summary notice.  ``previous=None`` (first run of ``--state``)
    reports every result."""
    changes, gone, unchanged = diff(previous, current)
    closing = [g for g in gone if g.status in CLOSING_STATUSES]
    changes += [Change("gone", gone_result(g), g.status) for g in closing]
    current = replace(current, scan_counts=current.counts_by_severity())
    prev_run = previous.run_id if previous is not None else None
    findings = []
    for ch in changes:
        data: dict[str, Any] = dict(ch.finding.result.data)
        data["change"] = {"kind": ch.kind,
                          "previous_status": ch.previous_status.value
                          if ch.previous_status else None,
                          "previous_run": prev_run}
        findings.append(replace(ch.finding, result=replace(ch.finding.result, data=data)))
    counts = Counter(ch.kind for ch in changes)
    summary_counts = {k: counts[k] for k in CHANGE_KINDS}
    summary_counts["unchanged"] = unchanged
    change_summary = {"since": origin, "previous_run": prev_run,
                      "scan_counts": current.counts(), "changes": summary_counts}
    notices = list(current.notices)
    summary = ", ".join(f"{counts[k]} {k}" for k in CHANGE_KINDS[:3])
    if previous is None:
        notices.append(f"no previous scan at {origin}: every result is reported "
                       f"({summary})")
        return replace(current, findings=tuple(findings), notices=tuple(notices),
                       change_summary=change_summary)
    notices += _mismatch_notices(previous, current, origin)
    not_compared = len(previous.findings) - unchanged - len(gone) - sum(
        1 for ch in changes if ch.previous_status is not None and ch.kind != "gone")
    notices.append(f"changes since {origin} (scan of {previous.started}): {summary}, "
                   f"{len(gone)} gone; {unchanged} unchanged result(s) not shown"
                   + (f"; {not_compared} result(s) of rules not run this time not compared"
                      if not_compared else ""))
    if gone:
        listed = "; ".join(f"{f.rule_id} {f.result.subject} (was {f.status.value})"
                           for f in gone[:MAX_GONE_LISTED])
        more = (f"; and {len(gone) - MAX_GONE_LISTED} more" if len(gone) > MAX_GONE_LISTED
                else "")
        notices.append(f"no longer reported since the previous scan: {listed}{more}")
    return replace(current, findings=tuple(findings), notices=tuple(notices),
                   change_summary=change_summary)


def load_previous(path: str) -> RunResult:
    """Read a saved JSON scan report (``--format json`` / ``--save-scan``); any problem is a
    :class:`UsageError` (exit 2) naming the file."""
    from aiaudit.core.inputs import read_input
    from aiaudit.core.ruleset import schema
    from aiaudit.core.serialize import run_from_dict
    from aiaudit.modes.savedreport import decode_json

    text = read_input(path, "previous scan", MAX_PREVIOUS_BYTES)
    data = decode_json(text, path, "a JSON scan report",
                       " (write one with --format json or --save-scan)")
    import jsonschema

    after_import("jsonschema")
    validator = jsonschema.Draft202012Validator(schema("report.schema.json"))
    err = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if err is not None:
        at = "/".join(str(p) for p in err.absolute_path) or "(top)"
        raise UsageError(f"{path}: not an aiaudit JSON scan report: {at}: "
                         f"{err.message[:200]}")
    try:
        return run_from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: not an aiaudit JSON scan report: {exc}") from None
