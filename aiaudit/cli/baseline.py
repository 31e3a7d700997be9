"""``aiaudit baseline``: write a node class (a ruleset pinning a known-good node's facts).

From one node (``--root``/``--live`` as for ``scan``) or from a fleet's saved reports
(``--from-fleet``: the values at least ``--min-share`` of the nodes have).  The class is
:mod:`aiaudit.baseline.ruleset`'s YAML; ``aiaudit scan --ruleset CLASS.yaml`` holds a node
to it.  Bad input (a report that is not JSON, an output that cannot be written) is one
message and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from aiaudit.cli.output import to_stderr, write_atomic, write_stdout
from aiaudit.core.errors import ExitCode, UsageError

REPORT_CAP = 256 * 1024 * 1024
"""Largest saved report read by ``--from-fleet`` (a dl-training report is ~0.5 MiB)."""


def populate(p: argparse.ArgumentParser) -> None:
    """Arguments of ``aiaudit baseline``."""
    p.add_argument("--root", default="/", metavar="DIR",
                   help="root of the known-good node (default /); another root is read "
                        "offline unless --live")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--live", dest="live", action="store_true", default=None,
                      help="read live state (/proc, /sys) under the root (a snapshot)")
    mode.add_argument("--offline", dest="live", action="store_false",
                      help="only what files decide (driver, toolkit, packages, kernel)")
    p.add_argument("--from-fleet", nargs="+", metavar="REPORT",
                   help="propose the class from saved JSON reports of a fleet "
                        "(`aiaudit scan -o json:FILE` with the dl-training ruleset)")
    p.add_argument("--min-share", type=float, default=90.0, metavar="PCT",
                   help="with --from-fleet: a value is the class's when at least PCT%% of "
                        "the nodes have it (default 90)")
    p.add_argument("--name", metavar="CLASS",
                   help="class (ruleset) name (default: the output file's name)")
    p.add_argument("--extends", default="dl-training", metavar="RULESET",
                   help="ruleset the class extends (default dl-training)")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="where to write the class ruleset (- for stdout)")


def _name(args: argparse.Namespace) -> str:
    if args.name:
        return str(args.name)
    if args.output != "-":
        base = os.path.basename(args.output)
        return base.rsplit(".", 1)[0] if "." in base else base
    return "node-class"


def _from_node(args: argparse.Namespace, name: str) -> str:
    from aiaudit.baseline.ruleset import Capture, render
    from aiaudit.core.host import Host
    from aiaudit.core.identity import host_info
    from aiaudit.linux.inventory.facts import inventory

    if not os.path.isdir(args.root):
        raise UsageError(f"--root {args.root}: not a directory")
    host = Host(args.root, live=args.live)
    info = host_info(host)
    inv = inventory(host)
    mid = f", machine id {info.machine_id}" if info.machine_id else ""
    cap = Capture(name, args.extends, f"host {info.hostname}{mid} ({info.root}, "
                  f"{info.mode})", info.hostname)
    return render(inv.facts, inv.unknown, cap)


def _read_report(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            data = fh.read(REPORT_CAP + 1)
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    if len(data) > REPORT_CAP:
        raise UsageError(f"{path}: larger than {REPORT_CAP >> 20} MiB: not a report")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not a JSON report: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not a JSON report (a {type(doc).__name__})")
    return doc


def _from_fleet(args: argparse.Namespace, name: str) -> str:
    from aiaudit.baseline.majority import node_facts, propose
    from aiaudit.baseline.ruleset import Capture, render
    from aiaudit.linux.inventory.model import KINDS, fact

    if not 0 < args.min_share <= 100:
        raise UsageError("--min-share: a percentage above 0, at most 100")
    nodes = []
    for path in args.from_fleet:
        got = node_facts(_read_report(path))
        if got is None:
            raise UsageError(f"{path}: the report has no inventory.facts result (scan with "
                             "the dl-training ruleset, or one that extends it)")
        nodes.append(got)
    templates = {n: fact(n, "", "") for n in KINDS}
    prop = propose(nodes, args.min_share / 100, templates)
    notes = [f"{f}: differs on {len(who)} node(s): {', '.join(who[:20])}"
             for f, who in prop.deviations]
    cap = Capture(name, args.extends, f"the majority ({args.min_share:g}%) of "
                  f"{len(nodes)} nodes' reports", f"majority of {len(nodes)} nodes")
    for n in notes:
        to_stderr(f"aiaudit: baseline: {n}")
    return render(prop.facts, prop.unknown, cap, ["Deviating nodes:", *notes] if notes else ())


def cmd(args: argparse.Namespace) -> int:
    """``aiaudit baseline``."""
    name = _name(args)
    text = _from_fleet(args, name) if args.from_fleet else _from_node(args, name)
    if args.output == "-":
        write_stdout(text)
    else:
        write_atomic(args.output, text)
    return ExitCode.OK
