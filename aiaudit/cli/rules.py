"""``aiaudit rules``, ``aiaudit explain`` and ``aiaudit validate``: what a ruleset holds."""

from __future__ import annotations

import argparse
import os

from aiaudit.cli.options import add_ruleset, add_timeout, load_ruleset, start_deadline
from aiaudit.cli.output import say, write_stdout
from aiaudit.core.errors import ExitCode


def populate_explain(e: argparse.ArgumentParser) -> None:
    e.add_argument("rule_id", metavar="RULE_ID", help="rule id (any case)")
    add_ruleset(e)
    add_timeout(e, "probing the rule")


def populate_rules(r: argparse.ArgumentParser) -> None:
    add_ruleset(r)
    r.add_argument("--tag", action="append", default=[], metavar="TAG",
                   help="only rules with this tag (repeatable: any of them)")
    add_timeout(r, "probing the rules")


def populate_validate(v: argparse.ArgumentParser) -> None:
    v.add_argument("file", metavar="FILE",
                   help="a ruleset file, or the name of a shipped ruleset (dl-training)")
    add_timeout(v, "validating")


def cmd_rules(args: argparse.Namespace) -> int:
    """``aiaudit rules``."""
    from aiaudit.cli.explain import rules_table

    deadline = start_deadline(args)
    write_stdout(rules_table(load_ruleset(args.ruleset), args.tag, deadline))
    return ExitCode.OK


def cmd_explain(args: argparse.Namespace) -> int:
    """``aiaudit explain RULE_ID``."""
    from aiaudit.cli.explain import explain

    deadline = start_deadline(args)
    write_stdout(explain(load_ruleset(args.ruleset), args.rule_id, deadline))
    return ExitCode.OK


def cmd_validate(args: argparse.Namespace) -> int:
    """``aiaudit validate FILE``."""
    start_deadline(args)
    rs = load_ruleset(_validate_ref(args.file), validate=True)
    say(f"{args.file}: ok ({rs.name} {rs.version}, {len(rs.rules)} rules)")
    return ExitCode.OK


def _validate_ref(name: str) -> str:
    """What ``aiaudit validate NAME`` validates: the file when NAME is a path or a file of
    that name is here, else the shipped (or plugin) ruleset of that name (``dl-training``;
    an unknown name is an error listing the shipped ones)."""
    from aiaudit.core.ruleset import is_path

    if is_path(name) or os.path.exists(name):
        return name if "/" in name else os.path.join(".", name)
    return name
