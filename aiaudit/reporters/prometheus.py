"""``prometheus`` reporter: text exposition format for node_exporter's textfile collector.

Write it atomically into the collector's directory (``-o prometheus:/var/lib/node_exporter/
textfile_collector/aiaudit.prom.tmp`` then ``mv``) from cron.  Series:

- ``aiaudit_result{rule,severity,subject,status,aspect}`` = 1, one per result (alert on
  ``aiaudit_result{status="fail",severity=~"high|critical"}``);
- ``aiaudit_result_failing{rule,severity,subject}`` = 1 for a failure, 0 otherwise;
- ``aiaudit_results{status}`` and ``aiaudit_failures{severity}``: counts;
- ``aiaudit_scan_timestamp_seconds``, ``aiaudit_scan_duration_seconds``,
  ``aiaudit_rules`` and ``aiaudit_scan_info{...}`` = 1 with the host and ruleset.

Every series has a ``ruleset`` label, so two aiaudit files in one textfile directory (the
hourly ``dl-training`` scan and the Slurm prolog's ``slurm-preflight`` scan) never share a
series: node_exporter drops duplicate series across files (and still reports
``node_textfile_scrape_error 0``).  No label holds an id that changes per scan (the run id
is not a label), so a rescan updates the same series instead of creating new ones;
subjects never contain line numbers, so editing a config file does not rename a series.

Label values are escaped as the exposition format requires (backslash, double quote and
line feed); a label set is never emitted twice for one metric (the collector would reject
the whole file).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.core.escape import text_safe
from aiaudit.core.model import Severity, Status, sorted_findings
from aiaudit.reporters._common import host_label


def escape_label(value: object) -> str:
    """A label value escaped for the text format (``\\``, ``"``, line feed)."""
    return (text_safe(value).replace("\\", "\\\\").replace("\n", "\\n")
            .replace('"', '\\"'))


def escape_help(text: str) -> str:
    """HELP text escaped for the text format (``\\`` and line feed)."""
    return text_safe(text).replace("\\", "\\\\").replace("\n", "\\n")


def _labels(labels: Mapping[str, object]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in labels.items()) + "}"


def _num(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


class _Doc:
    """The exposition document; ``common`` labels go first on every series."""

    def __init__(self, common: Mapping[str, object]) -> None:
        self.lines: list[str] = []
        self.common = dict(common)

    def metric(self, name: str, help_text: str,
               samples: list[tuple[Mapping[str, object], float]]) -> None:
        self.lines.append(f"# HELP {name} {escape_help(help_text)}")
        self.lines.append(f"# TYPE {name} gauge")
        seen: set[str] = set()
        for labels, value in samples:
            lab = _labels({**self.common, **labels})
            if lab in seen:
                continue
            seen.add(lab)
            self.lines.append(f"{name}{lab} {_num(value)}")


def _epoch(stamp: str) -> float:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """The run in the Prometheus text format (version 0.0.4)."""
    findings = sorted_findings(run)
    doc = _Doc({"ruleset": run.ruleset})
    h = run.host
    doc.metric("aiaudit_scan_info", "aiaudit scan of this host: tool, ruleset and host identity",
               [({"version": run.tool_version,
                  "ruleset_version": run.ruleset_version, "host": host_label(run),
                  "hostname": h.hostname, "mode": h.mode, "root": h.root}, 1)])
    doc.metric("aiaudit_scan_timestamp_seconds", "Start of the last scan, Unix time",
               [({}, _epoch(run.started))])
    doc.metric("aiaudit_scan_duration_seconds", "Duration of the last scan in seconds",
               [({}, float(run.duration_s))])
    doc.metric("aiaudit_rules", "Number of rules evaluated by the last scan",
               [({}, len(run.rules))])
    counts = run.counts()
    doc.metric("aiaudit_results", "Results of the last scan by status",
               [({"status": s.value}, counts[s.value]) for s in Status])
    fails: dict[str, int] = {s.value: 0 for s in Severity}
    for f in findings:
        if f.status is Status.FAIL:
            fails[f.severity.value] += 1
    doc.metric("aiaudit_failures", "Failed (unwaived) results of the last scan by severity",
               [({"severity": k}, v) for k, v in fails.items()])
    doc.metric("aiaudit_result",
               "One series per result of the last scan, value 1; the status is a label",
               [({"rule": f.rule_id, "severity": f.severity.value, "subject": f.result.subject,
                  "status": f.status.value,
                  "aspect": f.result.aspect.value if f.result.aspect else ""}, 1)
                for f in findings])
    failing: dict[tuple[str, str, str], int] = {}
    for f in findings:
        key = (f.rule_id, f.severity.value, f.result.subject)
        failing[key] = max(failing.get(key, 0), int(f.status is Status.FAIL))
    doc.metric("aiaudit_result_failing",
               "1 if the rule fails (unwaived) for the subject in the last scan, else 0",
               [({"rule": r, "severity": s, "subject": subj}, v)
                for (r, s, subj), v in failing.items()])
    return "\n".join(doc.lines) + "\n"


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``prometheus`` format."""
    return [ReporterSpec("prometheus", render,
                         "Prometheus text format for node_exporter's textfile collector",
                         "prom")]
