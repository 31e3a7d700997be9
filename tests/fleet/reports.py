"""Reports for fleet tests: one real scan of a fixture root, varied per node."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any, Mapping

from aiaudit.core.serialize import run_dict, run_from_dict
from aiaudit.reporters.events import events
from tests.helpers import ROOTS

BASE_ROOT = ROOTS / "gpu-matching-stack" / "root"


@functools.lru_cache(maxsize=1)
def _base_json() -> str:
    from aiaudit.core import plugins, ruleset
    from aiaudit.core.host import Host
    from aiaudit.core.scan import ScanOptions, scan

    rs = ruleset.load("dl-training", plugins.registry())
    run = scan(rs, Host(str(BASE_ROOT), live=False), ScanOptions())
    return json.dumps(run_dict(run))


def report(hostname: str, machine_id: str | None = None, *,
           results: Mapping[tuple[str, str] | str, tuple[str, str | None]] = {},
           host: Mapping[str, Any] = {},
           tool_version: str = "0.1.0", ruleset_version: str | None = None,
           started: str = "2026-12-01T10:00:00Z") -> dict[str, Any]:
    """The base scan as node ``hostname``: ``results`` maps a rule id (or rule id and
    subject) to the ``(status, actual)`` it gets on this node."""
    d = json.loads(_base_json())
    d["host"].update({"hostname": hostname, "machine_id": machine_id, "mode": "live",
                      "kernel": "6.1.0-18-amd64",
                      "os": {"name": "Debian GNU/Linux 12 (bookworm)", "id": "debian",
                             "version": "12"}})
    d["host"].update(host)
    d["tool"]["version"] = tool_version
    d["started"] = started
    d["run_id"] = f"run-{hostname}-{machine_id}-{started}"
    if ruleset_version:
        d["ruleset"]["version"] = ruleset_version
    for r in d["results"]:
        for key in ((r["rule_id"], r["subject"]), r["rule_id"]):
            if key in results:
                r["status"], r["actual"] = results[key]
                r["check_status"] = r["status"]
                break
    return d


def write(folder: Path, reports: list[dict[str, Any]]) -> list[Path]:
    """Each report as ``folder/<hostname>.json`` (pretty-printed, as scan writes it)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, d in enumerate(reports):
        p = folder / f"{d['host']['hostname']}-{i}.json"
        p.write_text(json.dumps(d, indent=2) + "\n")
        paths.append(p)
    return paths


def event_lines(d: Mapping[str, Any]) -> list[str]:
    """The report as the ``events`` reporter writes it (one JSON object per line)."""
    run = run_from_dict(copy.deepcopy(dict(d)))
    return [json.dumps(e) for e in events(run)]
