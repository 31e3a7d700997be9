#!/usr/bin/env python3
"""Benchmark of the Slurm prolog scan: what a job waits for before it starts.

Runs ``aiaudit scan --ruleset RULESET --format json --prolog`` N times as a fresh process
(as slurmd runs the prolog: interpreter start, imports, scan, report) and prints the median
and 95th percentile of the wall time, with the scan's own ``duration_s`` beside it (the part
that is not start-up)::

    python3 bench/prolog_bench.py --ruleset slurm-preflight -n 30
    python3 bench/prolog_bench.py --ruleset dl-training --root /mnt/image -- --offline

Arguments after ``--`` go to ``aiaudit scan``.  ``--json`` prints one JSON object instead.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from typing import Any, Sequence


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (no interpolation: a value that was really measured)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def command(args: argparse.Namespace) -> list[str]:
    """The measured command line."""
    base = shlex.split(args.aiaudit) if args.aiaudit else [sys.executable, "-m", "aiaudit"]
    return [*base, "scan", "--ruleset", args.ruleset, "--format", "json", "--prolog",
            "--root", args.root, *args.extra]


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, int, float | None]:
    """(wall seconds, exit code, the report's duration_s)."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    wall = time.perf_counter() - t0
    scan_s = None
    try:
        scan_s = float(json.loads(proc.stdout)["duration_s"])
    except (ValueError, KeyError, TypeError):
        if proc.returncode not in (0, 1, 3):
            sys.exit(f"aiaudit failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return wall, proc.returncode, scan_s


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Warm up, then time ``args.n`` runs."""
    argv = command(args)
    env = dict(os.environ)
    env.setdefault("SLURM_JOB_USER", args.user)
    for _ in range(args.warmup):
        run_once(argv, env)
    walls, scans, codes = [], [], []
    for _ in range(args.n):
        wall, code, scan_s = run_once(argv, env)
        walls.append(wall)
        codes.append(code)
        if scan_s is not None:
            scans.append(scan_s)
    return {
        "command": shlex.join(argv),
        "runs": args.n,
        "wall_median_s": round(statistics.median(walls), 4),
        "wall_p95_s": round(percentile(walls, 95), 4),
        "wall_min_s": round(min(walls), 4),
        "wall_max_s": round(max(walls), 4),
        "scan_median_s": round(statistics.median(scans), 4) if scans else None,
        "scan_p95_s": round(percentile(scans, 95), 4) if scans else None,
        "exit_codes": sorted(set(codes)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ruleset", default="slurm-preflight",
                   help="ruleset to scan with (default slurm-preflight)")
    p.add_argument("-n", type=int, default=20, help="timed runs (default 20)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs first (page cache)")
    p.add_argument("--root", default="/", help="root to scan (default /, live)")
    p.add_argument("--user", default=os.environ.get("USER", "root"),
                   help="SLURM_JOB_USER when not set (default $USER)")
    p.add_argument("--aiaudit", help="command to run instead of 'python -m aiaudit'")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("extra", nargs="*", help="after --: more arguments for aiaudit scan")
    args = p.parse_args(argv)
    if args.n < 1:
        p.error("-n must be >= 1")
    res = measure(args)
    if args.json:
        print(json.dumps(res))
    else:
        print(f"{res['command']}\n"
              f"{res['runs']} runs: median {res['wall_median_s'] * 1000:.0f} ms, "
              f"p95 {res['wall_p95_s'] * 1000:.0f} ms "
              f"(min {res['wall_min_s'] * 1000:.0f}, max {res['wall_max_s'] * 1000:.0f}); "
              f"scan itself: median "
              f"{(res['scan_median_s'] or 0) * 1000:.0f} ms; exit codes {res['exit_codes']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
