"""``aiaudit render`` and ``aiaudit remediate``: a saved scan rendered again, or turned into
a fix bundle."""

from __future__ import annotations

import argparse
import os

from aiaudit.cli.options import (
    add_pretty_option,
    add_sarif_category_option,
    add_timeout,
    start_deadline,
)
from aiaudit.cli.output import emit, error, parse_outputs, say
from aiaudit.core.errors import ExitCode
from aiaudit.core.model import SEVERITIES, Severity

REPORT_MIN_S = 5.0
"""Time the reports get when reading the saved report used up the --timeout deadline (as
:data:`aiaudit.cli.scan.REPORT_MIN_S`)."""


def populate_render(d: argparse.ArgumentParser) -> None:
    d.add_argument("report", metavar="SCAN.json", help="saved JSON report (- for stdin)")
    d.add_argument("--format", default=None, metavar="FORMAT",
                   help="report format for stdout and plain --output FILE (text, json, "
                        "sarif, ...; default text); given with only --output FORMAT:FILE "
                        "of other formats, it still goes to stdout")
    d.add_argument("--output", "-o", action="append", default=[], metavar="[FORMAT:]FILE",
                   help="write to FILE instead of stdout (repeatable; FORMAT:FILE picks "
                        "its format)")
    d.add_argument("--verbose", "-v", action="store_true",
                   help="text format: show details of passed and skipped rules")
    add_sarif_category_option(d)
    add_pretty_option(d)
    add_timeout(d, f"rendering and writing the reports (at least {REPORT_MIN_S:g} s after "
                   f"the report is read)")


def populate_remediate(m: argparse.ArgumentParser) -> None:
    m.add_argument("report", metavar="SCAN.json", help="saved JSON report (- for stdin)")
    m.add_argument("--output-dir", "-d", required=True, metavar="DIR",
                   help="directory for the bundle (created; must be empty unless --force)")
    m.add_argument("--min-severity", choices=SEVERITIES, default="info",
                   help="only fix failures at or above this severity (default info: all)")
    m.add_argument("--force", action="store_true",
                   help="write into DIR even if it is not empty")


def cmd_render(args: argparse.Namespace) -> int:
    """``aiaudit render SCAN.json``: bounded like ``scan`` (plugins load and the reports
    are written within ``--timeout``; a reporter that never returns is stopped)."""
    from aiaudit.cli.output import ReportDeadline, report_deadline
    from aiaudit.core import plugins
    from aiaudit.modes.savedreport import load_report

    deadline = start_deadline(args)
    reg = plugins.registry()
    outputs = parse_outputs(args, reg.reporters, format_to_stdout=True)
    run = load_report(args.report)
    try:
        with report_deadline(max(deadline.remaining() or 0.0, REPORT_MIN_S), "the reports were"):
            failed = emit(reg, run, outputs, verbose=args.verbose,
                           sarif_category=args.sarif_category, pretty=args.pretty)
    except ReportDeadline:
        error(f"the reports were not finished by the deadline (--timeout {args.timeout:g} s, "
               f"at least {REPORT_MIN_S:g} s after the report was read)")
        return ExitCode.USAGE
    return ExitCode.USAGE if failed else ExitCode.OK


def cmd_remediate(args: argparse.Namespace) -> int:
    """``aiaudit remediate SCAN.json --output-dir DIR``."""
    from aiaudit.modes.savedreport import load_report
    from aiaudit.remediate import bundle as remediate

    run = load_report(args.report)
    b = remediate.write(run, args.output_dir, min_severity=Severity(args.min_severity),
                        force=args.force)
    say(f"{args.output_dir}: {len(b.fixed)} failure(s) addressed: {len(b.files)} file(s), "
         f"{len(b.edits)} edit(s), {len(b.commands)} command(s); {len(b.needs_hand())} need a "
         f"step by hand.  Review {os.path.join(args.output_dir, remediate.README)}, then run "
         f"{remediate.SCRIPT}.")
    return ExitCode.OK
