#!/usr/bin/env python3
"""The prolog's instruction budget for the node-readiness rules (issue 28).

Issue 28 allows its rules to add at most 20% to the prolog scan's instruction count.  This
script measures that figure the way the README reports it: ``aiaudit scan --prolog
--ruleset slurm-preflight --format json`` under callgrind (``bench/bench.py``'s method:
instructions of the whole process, stable on a busy machine), the same ``--only`` list (every
rule of the ruleset) in every variant, the issue-28 rules removed with ``--skip`` for the
base, minimum of ``--runs`` runs after a warm-up run::

    python3 bench/prolog_budget.py                                  # this host, live
    python3 bench/prolog_budget.py --root tests/fixtures/roots/node-hgx-nvswitch/root
    python3 bench/prolog_budget.py --root R --per-rule --json out.json --check

Variants: ``base`` (all issue-28 rules skipped), ``+fabric`` (the fabric, link, hand-over and
topology rules), ``+kernel-log`` (the kernel-log rules), ``all`` (every rule); with
``--per-rule`` also the base plus each issue-28 rule alone.  ``--check`` exits 1 when
``all`` exceeds the base by more than ``--budget`` percent (default 20).  A ``--root`` is
scanned ``--live`` (a snapshot root, as the fixture roots are).  Measure an installed wheel
for absolute figures (an editable install adds an import hook to start-up); the differences
this script reports hold for either.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import REPO, callgrind, measure  # noqa: E402  (a sibling script, not a package)

FABRIC = ("GPU-FABRIC-REGISTERED", "FABRIC-MANAGER-RUNNING", "NVLINK-LINKS-UP",
          "NVLINK-ERRORS", "GPU-IDLE-AT-HANDOVER", "GPU-DEVICE-NODES", "GPU-MIG-SETTLED",
          "GPU-NIC-TOPOLOGY", "RDMA-PORTS-ACTIVE", "RDMA-LINK-FLAPPING", "GPU-MEMORY-HEALTH")
"""Issue 28's fabric, NVLink, hand-over, topology and memory-health rules (README "Node
readiness: fabric, links, hand-over, topology" and ``GPU-MEMORY-HEALTH``)."""

KERNEL_LOG = ("GPU-XID-RESET-REQUIRED", "GPU-XID-APP-REPEATED", "GPU-NVRM-OFF-BUS",
              "NVSWITCH-SXID-FATAL", "PCIE-AER-UNCORRECTED", "PCIE-AER-CORRECTED-RATE",
              "MCE-UNCORRECTED", "AMDGPU-RAS-LOG-UNCORRECTABLE")
"""Issue 28's kernel-log rules (README "Node readiness: kernel-log faults")."""

ISSUE_28 = FABRIC + KERNEL_LOG


def ruleset_ids(name: str) -> list[str]:
    """Every rule id of a shipped ruleset (its JSON twin), in ruleset order."""
    data = json.loads((REPO / "rulesets" / f"{name}.json").read_text())
    return [str(r["id"]) for r in data["data"]["rules"]]


def variants(ids: list[str], per_rule: bool) -> dict[str, list[str]]:
    """Variant name -> the rules it skips (of issue 28's, those in the ruleset)."""
    ours = [r for r in ISSUE_28 if r in ids]
    out = {"base": ours,
           "+fabric": [r for r in ours if r not in FABRIC],
           "+kernel-log": [r for r in ours if r not in KERNEL_LOG],
           "all": []}
    if per_rule:
        out.update({f"+{r}": [o for o in ours if o != r] for r in ours})
    return out


def minstr(argv: list[str], runs: int, cwd: str) -> float:
    """Minimum instruction count (millions) of ``runs`` callgrind runs after a warm-up."""
    measure(argv, 1, cwd)  # warm the page cache and .pyc files
    return min(callgrind(argv, cwd) for _ in range(runs)) / 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", help="a snapshot root, scanned --live (default: this host)")
    ap.add_argument("--ruleset", default="slurm-preflight")
    ap.add_argument("--runs", type=int, default=2, help="callgrind runs per variant (min)")
    ap.add_argument("--per-rule", action="store_true",
                    help="also the base plus each issue-28 rule alone")
    ap.add_argument("--budget", type=float, default=20.0, help="percent (default 20)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--check", action="store_true", help="exit 1 if over the budget")
    ap.add_argument("--aiaudit", default=None, help="aiaudit executable (default: venv's)")
    args = ap.parse_args()
    exe = args.aiaudit or shutil.which("aiaudit", path=str(Path(sys.executable).parent)) \
        or "aiaudit"
    ids = ruleset_ids(args.ruleset)
    where = ["--root", str(Path(args.root).resolve()), "--live"] if args.root else []
    # deadlines far away: under valgrind a rule runs ~50x slower, and a rule abandoned at
    # its deadline is work not measured
    cmd = [exe, "scan", "--prolog", "--ruleset", args.ruleset, "--format", "json",
           "--user", "root", "--timeout", "3600", "--rule-timeout", "3600", *where,
           "--only", *ids]
    tmp = tempfile.mkdtemp(prefix="aiaudit-bench-budget-")
    rows: dict[str, float] = {}
    try:
        for name, skip in variants(ids, args.per_rule).items():
            rows[name] = minstr([*cmd, *(["--skip", *skip] if skip else [])], args.runs, tmp)
            added = rows[name] - rows["base"]
            print(f"{name:<32} {rows[name]:>8.1f} M  {added:>+7.1f} M  "
                  f"{100 * added / rows['base']:>+6.1f}%", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    pct = 100 * (rows["all"] - rows["base"]) / rows["base"]
    ok = pct <= args.budget
    print(f"\nissue-28 rules: +{rows['all'] - rows['base']:.1f} M on {rows['base']:.1f} M "
          f"(+{pct:.1f}%, budget {args.budget:g}%)  {'ok' if ok else 'OVER'}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"root": args.root or "/", "ruleset": args.ruleset, "minstr": rows,
             "added_pct": pct, "budget_pct": args.budget, "aiaudit": exe}, indent=2))
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
