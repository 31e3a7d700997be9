"""``aiaudit fleet``: many nodes' reports aggregated."""

from __future__ import annotations

import argparse
import sys

from aiaudit.cli.options import DEFAULT_FAIL_ON, non_negative_int
from aiaudit.cli.output import parse_outputs, write_atomic
from aiaudit.core.errors import UsageError
from aiaudit.core.model import SEVERITIES

FLEET_FORMATS = ("text", "json", "html", "prometheus")


FLEET_EXIT_HELP = """\
exit codes (the fleet is judged as one scan, a rule failing on more than
--max-failing-nodes nodes counting as failed):
  0  no rule at or above --fail-on fails on more than N nodes
  1  one does (a machine id shared by several hosts counts as a high failure)
  2  usage error, or no usable report among the inputs
  3  no such failure, but a rule at or above --fail-on could not be evaluated
     on more than N nodes
  5  some input was unusable (one line each on stderr; the rest is aggregated)
     and the fleet would otherwise exit 0 or 3
"""


def populate_fleet(f: argparse.ArgumentParser) -> None:
    """Arguments of ``aiaudit fleet`` (and its epilog: the exit codes)."""
    f.epilog = FLEET_EXIT_HELP
    f.add_argument("inputs", nargs="+", metavar="REPORT",
                   help="saved JSON reports or event files, directories of them, globs, "
                        "or - for a stream of reports or events (JSON lines) on stdin")
    f.add_argument("--format", default="text", choices=FLEET_FORMATS,
                   help="output format for stdout / --output FILE (default text)")
    f.add_argument("--output", "-o", action="append", default=[], metavar="[FORMAT:]FILE",
                   help="write to FILE (repeatable; FORMAT:FILE picks its format; written "
                        "through a rename, so a textfile collector never reads half)")
    f.add_argument("--fail-on", choices=SEVERITIES, default=DEFAULT_FAIL_ON,
                   help=f"lowest severity whose failure counts (default {DEFAULT_FAIL_ON})")
    f.add_argument("--max-failing-nodes", type=non_negative_int, default=0, metavar="N",
                   help="fail only when a rule fails on more than N nodes (default 0)")
    f.add_argument("--since", metavar="PREVIOUS-FLEET.json",
                   help="report which nodes got worse or better since this saved "
                        "`aiaudit fleet --format json` report")
    f.add_argument("--top", type=non_negative_int, default=20, metavar="N",
                   help="text format: list at most N rules, outliers, changes (default 20)")
    f.add_argument("--jobs", "-j", type=non_negative_int, default=0, metavar="N",
                   help="processes that read and decode reports (default 0: one per CPU, "
                        "one fewer for stdin alone, at most 8; 1: no worker process)")


def cmd_fleet(args: argparse.Namespace) -> int:
    """``aiaudit fleet REPORT...``."""
    from aiaudit.fleet import gate
    from aiaudit.fleet.collect import collect, default_jobs
    from aiaudit.fleet.render import RENDERERS

    outputs = parse_outputs(args, RENDERERS)
    previous = None
    if args.since:
        from aiaudit.fleet.since import load_previous

        previous = load_previous(args.since)
    fleet = collect(args.inputs, jobs=args.jobs or default_jobs(args.inputs))
    for problem in fleet.problems:
        print(f"aiaudit: error: {problem}", file=sys.stderr)
    if not fleet.reports:
        raise UsageError("no usable report among the inputs")
    if previous is not None:
        import dataclasses

        from aiaudit.fleet.since import compare

        fleet = dataclasses.replace(fleet, since=compare(fleet, previous, args.since))
    for fmt, path in outputs:
        text = RENDERERS[fmt](fleet, args.fail_on, args.max_failing_nodes, top=args.top)
        if path is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            write_atomic(path, text)
    return gate.exit_code(fleet, args.fail_on, args.max_failing_nodes)
