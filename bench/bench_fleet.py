#!/usr/bin/env python3
"""Benchmark: time and peak memory of ``aiaudit fleet`` on 100, 1,000 and 10,000 reports.

The reports are real: one ``aiaudit scan`` of a fixture root with the full ``dl-training``
ruleset (every rule, ~125 KB of JSON pretty-printed), then varied per node as a fleet
varies: host names ``gpu00001`` ..., unique machine ids, 1% of nodes on another driver
version, 2% on another kernel, 3% failing vm.swappiness, 0.5% with an error result, 0.2%
sharing a cloned machine id.  They are written once per size, as a directory of
pretty-printed reports (as ``aiaudit scan -o json:DIR/HOST.json`` leaves them) and as one
JSON-lines stream (as ``srun ... | aiaudit fleet -`` reads it), then ``aiaudit fleet`` is
timed on each, in a child process whose CPU time and peak RSS are read from ``wait4``
(the peak of the largest process, the main one; each worker of ``-j`` holds one batch of
reports at a time), with one process (``-j1``) and one per CPU (``-j0``, the default).
On a machine others load, the wall time says more about them than about aiaudit: the CPU
time is the stable figure.

Targets (issue 16): time and peak RSS grow linearly; 10,000 reports in < 10 s with peak RSS
< 300 MB.  Usage::

    python3 bench/bench_fleet.py [--sizes 100 1000 10000] [--aiaudit .venv/bin/aiaudit]
                                 [--workdir DIR] [--keep] [--check]
    python3 bench/bench_fleet.py --hostile [--check]

``--check`` exits 1 when a target is missed.  This is a script, not a timed test.

``--hostile`` runs every hostile fleet of ``tests/fleet/hostile.py`` (issue 25: poisoned
severities, replayed reports, a 60 MB report of 500,000 results, ``yes '{'`` on stdin,
symlink loops under ``**``, a ``--since`` host-list bomb, duplicated keys, escape
sequences, a closed or full stdout), each on an honest fleet whose victim fails and on one
that passes, and prints exit code, peak RSS and CPU seconds of each (``RUSAGE_CHILDREN``
of a wrapper process); the targets are 100 MB and 30 s of CPU, never exit 4.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
ROOT = HERE / "tests" / "fixtures" / "roots" / "gpu-matching-stack" / "root"
TARGET_S, TARGET_MB = 10.0, 300.0


def base_report(aiaudit: str) -> dict:
    """One real full-ruleset scan as data."""
    out = subprocess.run([aiaudit, "scan", "--root", str(ROOT), "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    if not out.stdout:
        sys.exit(f"scan failed: {out.stderr}")
    return json.loads(out.stdout)


def vary(base: dict, i: int, rng: random.Random) -> dict:
    """Node ``i`` of the fleet (a shallow copy: only what differs is rebuilt)."""
    d = dict(base)
    host = dict(base["host"], hostname=f"gpu{i:05d}", machine_id=f"{i:032x}", mode="live",
                kernel="6.1.0-18-amd64")
    if rng.random() < 0.002:
        host["machine_id"] = "c1" * 16  # cloned image
    if rng.random() < 0.02:
        host["kernel"] = "6.1.0-13-amd64"
    d["host"] = host
    d["run_id"] = f"run-{i}"
    results = []
    driver = "535.161.08" if rng.random() < 0.01 else "550.54.15"
    swap_fail = rng.random() < 0.03
    error = rng.random() < 0.005
    for r in base["results"]:
        rid = r["rule_id"]
        if rid == "GPU-DRIVER-LIBRARY-MATCH":
            r = dict(r, status="pass", check_status="pass", actual=driver)
        elif rid == "SYSCTL-VM-SWAPPINESS":
            r = dict(r, status="fail" if swap_fail else "pass",
                     check_status="fail" if swap_fail else "pass",
                     actual="60" if swap_fail else "10")
        elif rid == "GPU-COUNT" and error:
            r = dict(r, status="error", check_status="error", actual=None)
        results.append(r)
    d["results"] = results
    return d


def generate(base: dict, n: int, folder: Path) -> tuple[Path, Path]:
    """``folder/reports/`` (one file per node, compact as ``scan -o json:FILE`` writes it)
    and ``folder/stream.jsonl``."""
    rng = random.Random(n)
    reports = folder / "reports"
    reports.mkdir(parents=True)
    with open(folder / "stream.jsonl", "w", encoding="utf-8") as stream:
        for i in range(1, n + 1):
            d = vary(base, i, rng)
            line = json.dumps(d, separators=(",", ":"), ensure_ascii=False) + "\n"
            (reports / f"gpu{i:05d}.json").write_text(line)
            stream.write(line)
    return reports, folder / "stream.jsonl"


def measure(cmd: list[str], stdin_path: Path | None = None
            ) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds (user + system, workers included), peak RSS in MB (of
    the largest process: the main one) and exit code of one run of ``cmd``."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if stdin_path:
        stdin.close()
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def hostile(check: bool) -> int:
    """Every hostile fleet, measured; 1 when one misses a target and ``check``."""
    sys.path.insert(0, str(HERE))
    from tests.fleet import hostile as cases
    from tests.hostile_trees import child_run

    missed = 0
    print(f"{'case':<20} {'honest':>6} {'exit':>4} {'peak RSS':>9} {'CPU':>7}")
    for name, case in cases.CASES.items():
        for failing in (True, False):
            with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
                folder = Path(tmp)
                args = case.build(folder, cases.honest(folder, failing))
                r = child_run(cases.argv(case, args), env=cases.env(), timeout=600)
            bad = r.returncode == 4 or r.maxrss_mb >= 100 or r.cpu_seconds >= 30
            missed += bad
            print(f"{name:<20} {int(failing):>6} {r.returncode:>4} {r.maxrss_mb:>6.1f} MB "
                  f"{r.cpu_seconds:>5.2f} s{'  MISSED' if bad else ''}", flush=True)
    return 1 if check and missed else 0


def main() -> int:
    """Run the benchmark and print a table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[100, 1000, 10000])
    ap.add_argument("--aiaudit", default=str(HERE / ".venv" / "bin" / "aiaudit"))
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--jobs", nargs="+", type=int, default=[1, 0],
                    help="values of aiaudit fleet -j to measure (0: one per CPU)")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--hostile", action="store_true",
                    help="measure the hostile fleets of tests/fleet/hostile.py instead")
    args = ap.parse_args()
    if args.hostile:
        return hostile(args.check)
    base = base_report(args.aiaudit)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-fleet-"))
    rows = []
    try:
        for n in args.sizes:
            folder = work / str(n)
            t0 = time.perf_counter()
            reports, stream = generate(base, n, folder)
            gen = time.perf_counter() - t0
            runs = [(f"directory -j{j}", [args.aiaudit, "fleet", str(reports), "--format",
                                          "json", "-j", str(j)], None) for j in args.jobs]
            runs += [(f"stdin -j{j}", [args.aiaudit, "fleet", "-", "--format", "json", "-j",
                                       str(j)], stream) for j in args.jobs]
            for how, cmd, inp in runs:
                wall, cpu, rss, code = measure(cmd, inp)
                rows.append((n, how, wall, rss, code))
                print(f"{n:>6} reports  {how:<14} {wall:7.2f} s wall  {cpu:7.2f} s CPU  "
                      f"{rss:6.1f} MB peak RSS  exit {code}  (load {os.getloadavg()[0]:.1f})",
                      flush=True)
            print(f"        (generated in {gen:.1f} s)", flush=True)
            if not args.keep:
                shutil.rmtree(folder)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average while measuring: {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs")
    missed = [r for r in rows if r[0] >= 10000 and (r[2] > TARGET_S or r[3] > TARGET_MB)]
    if missed:
        print(f"missed the target ({TARGET_S:g} s, {TARGET_MB:g} MB): {missed}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
