#!/usr/bin/env python3
"""Benchmark of the Slurm prolog scan: what a job waits for before it starts.

Runs ``aiaudit scan --ruleset RULESET --format json --prolog`` N times as a fresh process
(as slurmd runs the prolog: interpreter start, imports, scan, report) and prints the median
and 95th percentile of the wall time, with the scan's own ``duration_s`` beside it (the part
that is not start-up)::

    python3 bench/prolog_bench.py --ruleset slurm-preflight -n 30
    python3 bench/prolog_bench.py --ruleset dl-training --root /mnt/image -- --offline

Arguments after ``--`` go to ``aiaudit scan``.  ``--json`` prints one JSON object instead.

``--script PROLOG`` times the prolog script itself as slurmd runs it (issue 20): executed
directly, cwd ``/``, stdin ``/dev/null``, output captured, an environment of only SLURM_*
variables (plus ``AIAUDIT_PROLOG_ENV``, naming the settings file this benchmark writes in
place of ``/etc/aiaudit/prolog.env``).  Interleaved with it: a no-op prolog (``exit 0``) and
the scan alone (the script's own ``aiaudit`` command, same environment).  Wall time and the
CPU time of each process tree (user + system, all children: the figure that holds on a
loaded machine) are reported; target: the prolog adds at most 2x the scan's own time over
the no-op prolog::

    python3 bench/prolog_bench.py --script examples/slurm/prolog.sh \
        --aiaudit /usr/local/bin/aiaudit -n 30
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


SLURMD_ENV = {"SLURM_JOB_ID": "4242", "SLURM_JOB_UID": "0", "SLURM_JOB_GID": "0",
              "SLURM_JOBID": "4242", "SLURM_SCRIPT_CONTEXT": "prolog_slurmd",
              "SLURM_CLUSTER_NAME": "bench", "SLURM_JOB_PARTITION": "debug",
              "SLURMD_NODENAME": "node1", "SLURM_NODELIST": "node1",
              "SLURM_CONF": "/etc/slurm/slurm.conf"}
"""What slurmd 22.05 puts in a prolog's environment (``_build_env`` in
``src/slurmd/slurmd/req.c``), SLURM_JOB_USER added from ``--user``."""


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, CPU s of the process tree, exit code) of one run started as slurmd does."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd="/", stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.stdout.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def measure_script(args: argparse.Namespace) -> dict[str, Any]:
    """``--script``: no-op prolog, the prolog script and the scan alone, interleaved."""
    import shutil
    import tempfile

    exe = args.aiaudit or shutil.which("aiaudit", path=os.path.dirname(sys.executable))
    if not exe or not os.access(exe, os.X_OK):
        sys.exit("--script needs --aiaudit PATH (an aiaudit executable)")
    tmp = tempfile.mkdtemp(prefix="aiaudit-prolog-bench-")
    try:
        report, reason = f"{tmp}/run/prolog-last.json", f"{tmp}/run/prolog.reason"
        conf = f"{tmp}/prolog.env"
        with open(conf, "w", encoding="utf-8") as fh:
            fh.write(f"AIAUDIT={shlex.quote(exe)}\nAIAUDIT_RULESET={args.ruleset}\n"
                     f"AIAUDIT_REPORT={report}\nAIAUDIT_REASON_FILE={reason}\n")
        noop = f"{tmp}/noop.sh"
        with open(noop, "w", encoding="utf-8") as fh:
            fh.write("#!/bin/sh\nexit 0\n")
        os.chmod(noop, 0o755)
        env = {**SLURMD_ENV, "SLURM_JOB_USER": args.user, "AIAUDIT_PROLOG_ENV": conf}
        script = os.path.abspath(args.script)
        cases = {
            "noop prolog": (["/bin/sh", noop], env),
            "prolog script": (["/bin/sh", script, *args.extra], env),
            # what the script runs, alone (HOME as the script sets it)
            "scan alone": ([exe, "scan", "--prolog", "--ruleset", args.ruleset, "--fail-on",
                            "high", "--on-error", "pass", "--timeout", "10", "--output",
                            f"json:{report}", *args.extra], {**env, "HOME": "/root"}),
        }
        for argv, e in cases.values():
            for _ in range(args.warmup):
                _timed(argv, e)
        got: dict[str, list[tuple[float, float, int]]] = {k: [] for k in cases}
        for _ in range(args.n):
            for name, (argv, e) in cases.items():
                got[name].append(_timed(argv, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out: dict[str, Any] = {"script": script, "aiaudit": exe, "runs": args.n, "cases": {}}
    for name, runs in got.items():
        out["cases"][name] = {"wall_median_s": round(statistics.median(r[0] for r in runs), 4),
                              "cpu_median_s": round(statistics.median(r[1] for r in runs), 4),
                              "exit_codes": sorted({r[2] for r in runs})}
    c = out["cases"]
    for kind in ("wall", "cpu"):
        added = c["prolog script"][f"{kind}_median_s"] - c["noop prolog"][f"{kind}_median_s"]
        out[f"{kind}_added_over_scan"] = round(added / c["scan alone"][f"{kind}_median_s"], 2)
    return out


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
    p.add_argument("--script", metavar="PROLOG",
                   help="time this prolog script as slurmd runs it (vs a no-op prolog and "
                        "the scan alone)")
    p.add_argument("extra", nargs="*", help="after --: more arguments for aiaudit scan")
    args = p.parse_args(argv)
    if args.n < 1:
        p.error("-n must be >= 1")
    if args.script:
        res = measure_script(args)
        if args.json:
            print(json.dumps(res))
            return 0
        for name, r in res["cases"].items():
            print(f"{name:<14} wall {r['wall_median_s'] * 1000:7.1f} ms   cpu "
                  f"{r['cpu_median_s'] * 1000:7.1f} ms   exit {r['exit_codes']}")
        print(f"prolog - noop = {res['wall_added_over_scan']:.2f}x the scan's wall time, "
              f"{res['cpu_added_over_scan']:.2f}x its CPU time (target <= 2)")
        return 0
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
