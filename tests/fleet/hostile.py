"""Hostile fleets (issue 25): an honest fleet of real reports, and each attack on it.

Anyone who can write one node's report can hand ``aiaudit fleet`` anything.  Each case
here builds, in a folder, the honest fleet plus what one hostile writer adds, and says how
to run the fleet on it; ``tests/fleet/test_hostile_fleet.py`` runs each in a child process
(peak RSS and CPU from ``RUSAGE_CHILDREN``) and holds it to the issue's bar: the same
verdict as the honest fleet, or the honest verdict's exit code 5 with a problem line when
the honest fleet passes, within 100 MB and 30 s of CPU, never exit 4, never a traceback.
``bench/bench_fleet.py --hostile`` prints the same runs as a table.

The honest fleet: :data:`NODES` reports of one real ``dl-training`` scan, every rule
passing, except that node :data:`VICTIM` fails ``vm.swappiness`` when ``failing`` (honest
exit 1) or passes too (honest exit 0).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tests.fleet.reports import report

NODES = 12
VICTIM = "gpu07"
SWAP = "SYSCTL-VM-SWAPPINESS"  # medium in dl-training
STARTED = "2026-12-01T10:00:00Z"
HOSTILE_TEXT = "\x07\x9b2J\u202egnp.exe\x1b]0;owned\x07\x1b[2J\u2066x"
"""BEL, an 8-bit CSI (clear screen), a right-to-left override, an OSC retitle, a 7-bit
clear screen and a bidi isolate."""


def _mid(i: int) -> str:
    return f"{i:032x}"


def _uuid(i: int) -> str:
    return f"4c4c4544-0000-1000-8000-{i:012x}"


def node(i: int, *, fail: bool = False, **kw: object) -> dict:
    """Honest node ``gpu{i:02d}``: every rule passes (``fail``: swappiness fails)."""
    d = report(f"gpu{i:02d}", _mid(i), host={"product_uuid": _uuid(i)},
               started=str(kw.pop("started", STARTED)))
    for r in d["results"]:
        if r["status"] in ("fail", "error"):
            r["status"] = r["check_status"] = "pass"
        if r["rule_id"] == SWAP:
            r["status"] = r["check_status"] = "fail" if fail else "pass"
            r["actual"] = "60" if fail else "10"
    for k, v in kw.items():
        d[k] = v
    return d


def honest(folder: Path, failing: bool) -> Path:
    """The honest fleet as ``folder/reports/gpuNN.json`` (compact, as ``scan -o json:``
    writes it)."""
    reports = folder / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    for i in range(1, NODES + 1):
        d = node(i, fail=failing and f"gpu{i:02d}" == VICTIM)
        (reports / f"gpu{i:02d}.json").write_text(json.dumps(d, separators=(",", ":")))
    return reports


def compact(d: dict) -> str:
    return json.dumps(d, separators=(",", ":"))


@dataclass
class Case:
    """One attack: what it adds to the honest fleet and how the fleet is run on it."""

    name: str
    build: Callable[[Path, Path], list[str]]
    """``(folder, honest reports folder) -> aiaudit fleet arguments``."""
    shell: str | None = None
    """A shell command line instead (``{aiaudit}`` and the arguments filled in)."""
    same_verdict_only: bool = False
    """The hostile input is not a problem (symlink loops, duplicated keys): the verdict
    is exactly the honest one, exit 5 is not allowed."""
    expect_code: int | None = None
    """An exit code the case must give (output errors: 2)."""
    notes: list[str] = field(default_factory=list)


def _poisoned(folder: Path, reports: Path) -> list[str]:
    d = node(1)  # gpu01's own report, sorted first, every severity "info"
    for r in d["results"]:
        r["severity"] = "info"
    for r in d["rules"]:
        r["severity"] = "info"
    (reports / "aaa-gpu01.json").write_text(compact(d))
    (reports / "gpu01.json").unlink()
    return [str(reports)]


def _victim_index() -> int:
    return int(VICTIM.removeprefix("gpu"))


def _replay_future(folder: Path, reports: Path) -> list[str]:
    d = node(_victim_index(), started="9999-12-31T23:59:59Z")
    (reports / "aaa-replay.json").write_text(compact(d))
    return [str(reports)]


def _replay_newer(folder: Path, reports: Path) -> list[str]:
    d = node(_victim_index(), started="2026-12-01T11:00:00Z")  # newer, every rule passes
    (reports / "aaa-replay.json").write_text(compact(d))
    return [str(reports)]


def _version_split(folder: Path, reports: Path) -> list[str]:
    """The victim and gpu03 fail, on two aiaudit versions: two nodes fail fleet-wide, so
    --max-failing-nodes 1 fails (the honest fleet: victim failing alone, N=0)."""
    d = node(3, fail=True)
    d["tool"]["version"] = "0.2.0"
    (reports / "gpu03.json").write_text(compact(d))
    return [str(reports), "--max-failing-nodes", "1"]


def _huge_integer(folder: Path, reports: Path) -> list[str]:
    d = node(2)
    text = compact(d).replace('"duration_s":', '"duration_s":' + "9" * 5000 + ",\"x\":", 1)
    (reports / "gpu02.json").write_text(text)
    return [str(reports)]


def _huge_report(folder: Path, reports: Path) -> list[str]:
    """A 60 MB report of 500,000 results (issue 25: 1-2.7 GB and a 415 MB Prometheus
    file), in place of gpu02's, written compact on one line."""
    d = node(2)
    head = compact({k: v for k, v in d.items() if k != "results"})[:-1]
    one = ('{"rule_id":"R%d","check":"x.y","severity":"critical","title":"t","status":'
           '"fail","check_status":"fail","subject":"s%d","message":"' + "m" * 60
           + '","evidence":[]}')
    with open(reports / "gpu02.json", "w") as fh:
        fh.write(head + ',"results":[')
        fh.write(",".join(one % (i, i) for i in range(500_000)))
        fh.write("]}")
    return [str(reports), "-o", f"prometheus:{folder / 'fleet.prom'}",
            "-o", f"json:{folder / 'fleet.json'}"]


def _many_small_results(folder: Path, reports: Path) -> list[str]:
    """Just under the byte bound, but 200,000 results: refused before it is decoded."""
    d = node(2)
    head = compact({k: v for k, v in d.items() if k != "results"})[:-1]
    one = '{"rule_id":"R","severity":"info","status":"pass","subject":"%d"}'
    with open(reports / "gpu02.json", "w") as fh:
        fh.write(head + ',"results":[' + ",".join(one % i for i in range(200_000)) + "]}")
    return [str(reports)]


def _endless_stdin(folder: Path, reports: Path) -> list[str]:
    return ["-", str(reports)]


def _symlink_loops(folder: Path, reports: Path) -> list[str]:
    (reports / "loop").symlink_to(".")
    (reports / "up").symlink_to("..")
    sub = reports / "sub"
    sub.mkdir()
    (sub / "again").symlink_to("../..")
    (sub / "self").symlink_to("self")  # a link to itself: ELOOP when read
    return [f"{reports}/**/*.json", str(reports)]


def _hostlist_bomb(folder: Path, reports: Path) -> list[str]:
    """A 13 KB ``--since`` report whose host lists name its 100,000 nodes 60 times per
    rule, for 60 rules: 360 million names (issue 25: 13 KB of lists took 2.6 GB)."""
    ranges = ",".join(["n[0-99999]"] * 60)
    rules = [{"id": f"R{i}", "severity": "high", "title": "", "counts": {},
              "failing": {"count": 1, "hosts": ranges}, "error": {"count": 0, "hosts": ""}}
             for i in range(20)]
    doc = {"kind": "aiaudit.fleet", "schema_version": "1.0",
           "groups": [{"nodes": {"count": 1, "hosts": "n[0-99999]"}, "rules": rules}]}
    path = folder / "bomb.json"
    path.write_text(json.dumps(doc))
    return [str(reports), "--since", str(path)]


def _duplicate_keys(folder: Path, reports: Path) -> list[str]:
    """gpu05's report with a second ``host`` between its rules and results (where the
    reader cuts): ``json.loads`` and ``jq`` read the second, gpu05 itself."""
    d = node(5)
    d["host"] = {**d["host"], "hostname": "gpu99"}  # the first host: a lie jq ignores
    text = compact(d)
    real = compact({"host": node(5)["host"]})[1:-1]
    at = text.index(',"results":[')
    (reports / "gpu05.json").write_text(text[:at] + "," + real + text[at:])
    return [str(reports)]


def _terminal(folder: Path, reports: Path) -> list[str]:
    """Escape sequences and bidi characters in every string a report can carry into the
    outputs: rule titles (judged by its own severities: no shipped ruleset of that
    version), values, subjects, host facts, the ruleset's name."""
    for i in (1, 2):
        d = node(i)
        d["ruleset"]["version"] = "1.0" + HOSTILE_TEXT[:3]
        d["host"]["kernel"] = HOSTILE_TEXT
        for r in d["results"]:
            r["title"] = HOSTILE_TEXT
            if r["rule_id"] == SWAP:
                r["actual"] = HOSTILE_TEXT + str(i)
                r["subject"] = HOSTILE_TEXT
        (reports / f"gpu0{i}.json").write_text(compact(d))
    return [str(reports), "-o", f"html:{folder / 'fleet.html'}",
            "-o", f"prometheus:{folder / 'fleet.prom'}", "-o", f"text:{folder / 'fleet.txt'}"]


def _stdout_full(folder: Path, reports: Path) -> list[str]:
    return [str(reports)]


CASES: dict[str, Case] = {c.name: c for c in [
    Case("poisoned-severity", _poisoned),
    Case("replay-future", _replay_future),
    Case("replay-newer", _replay_newer),
    Case("version-split", _version_split),
    Case("huge-integer", _huge_integer),
    Case("huge-report", _huge_report),
    Case("many-small-results", _many_small_results),
    Case("endless-stdin", _endless_stdin, shell="yes '{' | {aiaudit} fleet {args}"),
    Case("symlink-loops", _symlink_loops, same_verdict_only=True),
    Case("hostlist-bomb", _hostlist_bomb),
    Case("duplicate-keys", _duplicate_keys, same_verdict_only=True),
    Case("terminal", _terminal),
    Case("stdout-closed", _stdout_full, shell="{aiaudit} fleet {args} >&-", expect_code=2),
    Case("stdout-full", _stdout_full, shell="{aiaudit} fleet {args} > /dev/full",
         expect_code=2),
]}


def aiaudit_command() -> str:
    """``python -m aiaudit`` of this interpreter, quoted for a shell."""
    import shlex

    return f"{shlex.quote(sys.executable)} -m aiaudit"


def argv(case: Case, args: list[str]) -> list[str]:
    """The command line that runs the case (through ``sh -c`` for a shell case)."""
    import shlex

    if case.shell is None:
        return [sys.executable, "-m", "aiaudit", "fleet", *args]
    line = case.shell.replace("{aiaudit}", aiaudit_command()).replace(
        "{args}", " ".join(shlex.quote(a) for a in args))
    return ["/bin/sh", "-c", line]


def env() -> dict[str, str]:
    """The environment: the checkout first on ``PYTHONPATH`` (``-m aiaudit`` from here)."""
    root = str(Path(__file__).resolve().parents[2])
    return {"PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
