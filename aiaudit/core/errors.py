# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Exceptions and exit codes.

Only :func:`aiaudit.cli.main` turns these into messages and exit codes (the one error
boundary); everything else raises.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Process exit codes of ``aiaudit`` (documented in ``--help`` and the README)."""

    OK = 0
    """No failed rule at or above ``--fail-on``."""
    FAILED = 1
    """At least one rule at or above ``--fail-on`` failed."""
    USAGE = 2
    """Usage, ruleset, waiver or input error: one message on stderr, nothing scanned."""
    NOT_EVALUATED = 3
    """No failure at or above the threshold, but a rule at or above it could not be
    evaluated (error result): the caller cannot tell whether the host is good."""
    INTERNAL = 4
    """Internal error: a bug in aiaudit (never a finding, never a usage error)."""
    BAD_INPUT = 5
    """``aiaudit fleet`` only: some input report was unusable (one line each on stderr),
    the rest was aggregated, and the fleet would otherwise exit 0 or 3."""
    INTERRUPTED = 130
    """Interrupted (``SIGINT``, Ctrl-C): 128 + the signal number, as a shell reports it."""


class AuditError(Exception):
    """Base class of every error aiaudit raises on purpose."""


class UsageError(AuditError):
    """Bad command line or input file; exit code 2."""


class RulesetError(UsageError):
    """A ruleset (or waiver file) is invalid.  ``problems`` lists every problem found."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class ParseError(AuditError):
    """A parser could not make sense of its input.  Parsers raise only this."""

    def __init__(self, message: str, *, line: int | None = None, source: str | None = None):
        self.line = line
        self.source = source
        where = ""
        if source and line:
            where = f"{source}:{line}: "
        elif source:
            where = f"{source}: "
        elif line:
            where = f"line {line}: "
        super().__init__(f"{where}{message}")


class HostError(AuditError):
    """Something on the scanned host could not be read (the rule gets an error result).
    ``path``: the host path that could not be read, when one was (the message starts with
    it), so a result can name it as evidence."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class NotFound(HostError):
    """The path does not exist on the scanned host (or a symlink on the way dangles)."""


class PathEscape(HostError):
    """The path, or a symlink on the way, leads outside the scanned root: refused."""


class SymlinkLoop(HostError):
    """Too many symbolic links on the way (ELOOP): the real program could not open it
    either."""


class NotRegularFile(HostError):
    """The path is a FIFO, device, socket or directory where a file was expected."""


class TooLarge(HostError):
    """The file is larger than the read cap."""


class LiveStateUnavailable(HostError):
    """Live state (/proc, /sys, commands) was asked for in an offline scan."""


class CommandError(HostError):
    """A command could not be run, failed, or timed out."""


class DeadlineExceeded(AuditError):
    """The scan deadline passed before the rule finished."""
