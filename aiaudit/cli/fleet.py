"""``aiaudit fleet``: many nodes' reports aggregated."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from aiaudit.cli.options import DEFAULT_FAIL_ON, non_negative_int
from aiaudit.cli.output import OutputError, error, parse_outputs, write_atomic, write_stdout
from aiaudit.core.errors import UsageError
from aiaudit.core.model import SEVERITIES

if TYPE_CHECKING:
    from aiaudit.fleet.model import Fleet

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

A rule's severity is that of the ruleset the fleet is judged by (--ruleset, else
the shipped ruleset of the reports' name and version), never a report's own;
nodes are counted by machine id and product UUID (a host name is a label).
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
    f.add_argument("--ruleset", action="append", default=[], metavar="NAME|FILE",
                   help="judge the reports of this ruleset (same name and version) by its "
                        "severities, not by the reports' own (repeatable; default: the "
                        "shipped ruleset of the reports' name and version)")
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
    from aiaudit.core.escape import human_safe, text_safe
    from aiaudit.fleet import gate
    from aiaudit.fleet.authority import Judges
    from aiaudit.fleet.collect import collect, default_jobs
    from aiaudit.fleet.render import RENDERERS

    outputs = parse_outputs(args, RENDERERS)
    judges = Judges(args.ruleset)
    fleet = collect(args.inputs, jobs=args.jobs or default_jobs(args.inputs), judges=judges)
    if not fleet.reports:
        for problem in fleet.problems:
            error(human_safe(problem))
        raise UsageError("no usable report among the inputs")
    if args.since:
        fleet = _with_since(fleet, args.since)
    for problem in fleet.problems:
        error(human_safe(problem))
    if fleet.problems_not_kept:
        error(f"... and {fleet.problems_not_kept} more input problems")
    lost: list[str] = []
    for fmt, path in outputs:
        try:
            text = text_safe(RENDERERS[fmt](fleet, args.fail_on, args.max_failing_nodes,
                                            top=args.top))
            if path is None:
                write_stdout(text)
            else:
                write_atomic(path, text)
        except OutputError as exc:
            lost.append(f"{exc}; the {fmt} report for {path or 'stdout'} was not written")
    if lost:  # as scan: one message per lost report, the others written, exit 2
        for line in lost[:-1]:
            error(line)
        raise OutputError(lost[-1])
    return int(gate.exit_code(fleet, args.fail_on, args.max_failing_nodes))


def _with_since(fleet: Fleet, path: str) -> Fleet:
    """``fleet`` with the comparison to the previous fleet report ``path``; a previous
    report that cannot be used is a problem line (exit 5 unless the fleet fails), and the
    fleet is reported without it."""
    import dataclasses

    from aiaudit.fleet.since import SinceError, compare, load_previous

    try:
        previous = load_previous(path)
    except SinceError as exc:
        return dataclasses.replace(fleet, problems=(*fleet.problems, f"--since {exc}"))
    return dataclasses.replace(fleet, since=compare(fleet, previous, path))
