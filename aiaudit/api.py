# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""The public API for plugin authors: everything a check or reporter plugin needs.

A plugin module (built-in or third-party) defines hook implementations::

    from aiaudit.api import CheckSpec, Result, Status, hookimpl

    @hookimpl
    def aiaudit_register_checks():
        return [CheckSpec(id="site.motd", title="...", params_schema={...}, run=run)]
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import pluggy

from aiaudit.core.model import (
    Aspect,
    Evidence,
    Remediation,
    Result,
    RunResult,
    Severity,
    Snippet,
    SnippetKind,
    Status,
)
from aiaudit.core.startup.records import record

if TYPE_CHECKING:
    from aiaudit.core.host import Host

hookimpl = pluggy.HookimplMarker("aiaudit")
"""Decorator for hook implementations in plugin modules."""

__all__ = [
    "Aspect",
    "CheckContext",
    "CheckSpec",
    "Evidence",
    "Remediation",
    "ReporterSpec",
    "Result",
    "RulesetSource",
    "RunResult",
    "Severity",
    "Snippet",
    "SnippetKind",
    "Status",
    "hookimpl",
]


@record
class CheckContext:
    """What a check gets for one rule: the host, the rule's params and run settings."""

    host: Host
    params: Mapping[str, Any]
    """The rule's params, with the check schema's defaults filled in."""
    rule_id: str = ""
    user: str | None = None
    """The training user (``--user``, ``SLURM_JOB_USER``, ``SUDO_USER``), if given."""
    user_source: str | None = None
    """Where ``user`` came from (``--user``, ``SLURM_JOB_USER``...)."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Run-wide settings (for example ``{"env": {...}}``) for checks that need them."""


CheckFn = Callable[[CheckContext], Iterable[Result]]


@record
class CheckSpec:
    """A check: generic logic that rules bind with params and a severity."""

    id: str
    """Lowercase dotted id, e.g. ``kernel.sysctl``."""
    title: str
    run: CheckFn
    """Yields one :class:`Result` per subject.  Must only read through ``ctx.host``.  A
    result of the wrong shape (``status="fail"`` instead of :attr:`Status.FAIL`, a command
    string where a :class:`Snippet` belongs) is an ``error`` result for the rule."""
    params_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    """JSON Schema (2020-12) for the rule params; ``default`` values are filled in."""
    description: str = ""
    """What the check looks at and how it decides (shown by ``aiaudit explain``)."""
    modes: tuple[str, ...] = ("live", "offline")
    """Scan modes in which the check can say something (shown by ``aiaudit explain``); in
    the other modes the check itself yields a ``skip`` saying why."""
    origin: str = ""
    """Who registered the check, filled in by the registry: empty for a built-in check,
    else the third-party plugin and its distribution (named in error results).  The runner
    runs a check with an origin in a worker process it can kill at the deadline."""


Renderer = Callable[[RunResult, Mapping[str, Any]], str]


@record
class ReporterSpec:
    """An output format."""

    name: str
    """Format name used on the command line (``--format NAME``)."""
    render: Renderer
    """Pure function: the run result and options to the document text."""
    description: str = ""
    extension: str = "txt"
    origin: str = ""
    """Who registered the reporter (filled in by the registry; empty for a built-in)."""


@record
class RulesetSource:
    """A ruleset shipped by a plugin: its name and a loader of its YAML text."""

    name: str
    load: Callable[[], str]
    """Returns the YAML text."""
    origin: str = ""
    """Where it comes from (shown in messages)."""
    load_data: Callable[[], Any] | None = None
    """Optional fast path: returns the already-parsed document (for example from a JSON
    twin of the YAML file), or ``None`` when no up-to-date parsed copy exists."""
