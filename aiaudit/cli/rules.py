"""``aiaudit rules``, ``aiaudit explain`` and ``aiaudit validate``: what a ruleset holds."""

from __future__ import annotations

import argparse
import os

from aiaudit.cli.options import add_ruleset, load_ruleset
from aiaudit.cli.output import say, write_stdout
from aiaudit.core.errors import ExitCode


def populate_explain(e: argparse.ArgumentParser) -> None:
    e.add_argument("rule_id", metavar="RULE_ID", help="rule id (any case)")
    add_ruleset(e)


def populate_rules(r: argparse.ArgumentParser) -> None:
    add_ruleset(r)
    r.add_argument("--tag", action="append", default=[], metavar="TAG",
                   help="only rules with this tag (repeatable: any of them)")


def populate_validate(v: argparse.ArgumentParser) -> None:
    v.add_argument("file", metavar="FILE")


def cmd_rules(args: argparse.Namespace) -> int:
    """``aiaudit rules``."""
    from aiaudit.cli.explain import rules_table

    write_stdout(rules_table(load_ruleset(args.ruleset), args.tag))
    return ExitCode.OK


def cmd_explain(args: argparse.Namespace) -> int:
    """``aiaudit explain RULE_ID``."""
    from aiaudit.cli.explain import explain

    write_stdout(explain(load_ruleset(args.ruleset), args.rule_id))
    return ExitCode.OK


def cmd_validate(args: argparse.Namespace) -> int:
    """``aiaudit validate FILE``."""
    rs = load_ruleset(args.file if "/" in args.file else os.path.join(".", args.file),
                       validate=True)
    say(f"{args.file}: ok ({rs.name} {rs.version}, {len(rs.rules)} rules)")
    return ExitCode.OK
