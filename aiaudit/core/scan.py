# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""The one in-process entry point: :func:`scan` a host with a ruleset, get a RunResult.

What a scan is, in order: select the rules (``--only`` / ``--skip``), run them
(:mod:`aiaudit.core.runner`: threads, the deadline, third-party checks in a worker
process), bind each result to its rule (a :class:`~aiaudit.core.model.Finding`), read the
host's identity, apply the waivers (:func:`aiaudit.core.waivers.apply_waivers`) and collect
one :class:`~aiaudit.core.model.RunResult`.  :func:`exit_status` is the verdict the command
line returns for it.
"""

from __future__ import annotations

import time
from dataclasses import field
from typing import Any, Callable, Mapping, Sequence

from aiaudit import __version__
from aiaudit.api import CheckContext
from aiaudit.core.errors import ExitCode
from aiaudit.core.host import Deadline, Host
from aiaudit.core.model import Finding, HostInfo, Result, RunResult, Severity, Status, Waiver
from aiaudit.core.ruleset import Rule, Ruleset
from aiaudit.core.runner import DEFAULT_RULE_TIMEOUT, run_rules
from aiaudit.core.startup import random_uuid
from aiaudit.core.startup.records import record


@record
class ScanOptions:
    """How to run a scan (everything the command line decides)."""

    user: str | None = None
    user_source: str | None = None
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    timeout: float | None = None
    """Deadline for the whole scan, in seconds."""
    rule_timeout: float = DEFAULT_RULE_TIMEOUT
    fail_on: Severity = Severity.HIGH
    waivers: tuple[Waiver, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    reraise: bool = False
    """Re-raise unexpected check exceptions (tests and ``--debug``)."""
    today: str | None = None
    """Date used for waiver expiry (``YYYY-MM-DD``); today in UTC when ``None``."""
    deadline: Deadline | None = None
    """The scan deadline if it is already running (the CLI starts it before loading
    plugins, so that their registration counts); else ``timeout`` from the scan's start."""
    image_kind: str | None = None
    """What the scanned root is (``--image-kind``: one of
    :data:`~aiaudit.core.model.IMAGE_KINDS`), overriding what its files suggest."""
    kernel_cmdline: str | None = None
    """The kernel command line the scanned system boots with (``--kernel-cmdline``): for a
    stateless image, whose provisioner passes it; overrides the boot loader files."""


def select_rules(ruleset: Ruleset, only: Sequence[str], skip: Sequence[str]) -> list[Rule]:
    """The rules to run after ``--only`` / ``--skip`` (ids must exist: caller validates)."""
    rules = list(ruleset.rules)
    if only:
        wanted = set(only)
        rules = [r for r in rules if r.id in wanted]
    if skip:
        unwanted = set(skip)
        rules = [r for r in rules if r.id not in unwanted]
    return rules


def scan(ruleset: Ruleset, host: Host, options: ScanOptions,
         host_info: Callable[[Host], HostInfo] | None = None) -> RunResult:
    """Run every selected rule of ``ruleset`` against ``host`` and collect a RunResult
    (``host_info`` reads the host's identity: :func:`aiaudit.core.identity.host_info`
    unless given)."""
    from aiaudit.core.identity import host_info as default_host_info

    started_wall = time.gmtime()  # UTC, as struct_time: no datetime import
    t0 = time.monotonic()
    deadline = options.deadline or Deadline(options.timeout)
    host.deadline = deadline
    _state_facts(host, options)
    rules = select_rules(ruleset, options.only, options.skip)
    settings = dict(options.settings)

    def make_ctx(rule: Rule) -> CheckContext:
        return CheckContext(host=host, params=rule.params, rule_id=rule.id, user=options.user,
                            user_source=options.user_source, settings=settings)

    ran = run_rules(rules, make_ctx, deadline, timeout=options.timeout,
                    rule_timeout=options.rule_timeout, reraise=options.reraise,
                    after_fork=host.after_fork)
    notices: list[str] = []
    if ran.missed:
        notices.append(f"scan deadline of {options.timeout or 0:g}s reached; "
                       f"{ran.missed} rule(s) not evaluated")
    findings = [_finding(rule, r) for k, rule in enumerate(rules)
                for r in ran.results.get(k, ())]
    info = (host_info or default_host_info)(host)
    if options.waivers:  # the waiver module is imported only when there are waivers
        from aiaudit.core.waivers import apply_waivers

        today = options.today or time.strftime("%Y-%m-%d", started_wall)
        findings, waived = apply_waivers(findings, options.waivers, info, today,
                                         [r.id for r in rules])
        notices += waived
    return RunResult(
        tool_version=__version__,
        run_id=random_uuid(),
        started=time.strftime("%Y-%m-%dT%H:%M:%SZ", started_wall),
        duration_s=round(time.monotonic() - t0, 4),
        host=info,
        ruleset=ruleset.name,
        ruleset_version=ruleset.version,
        ruleset_source=ruleset.source,
        rules=tuple(r.info for r in rules),
        findings=tuple(findings),
        fail_on=options.fail_on,
        notices=tuple(notices),
        training_user=options.user,
        training_user_source=options.user_source,
        rule_durations={r.id: round(ran.durations[k], 6) for k, r in enumerate(rules)
                        if k in ran.durations},
    )


def _state_facts(host: Host, options: ScanOptions) -> None:
    """Hand the facts the person scanning stated (``--image-kind``, ``--kernel-cmdline``)
    to the host, where the checks read them; a kind outside
    :data:`~aiaudit.core.model.IMAGE_KINDS` is a usage error."""
    from aiaudit.core.model import IMAGE_KINDS

    if options.image_kind is not None:
        if options.image_kind not in IMAGE_KINDS:
            from aiaudit.core.errors import UsageError

            raise UsageError(f"--image-kind {options.image_kind!r}: expected one of "
                             + ", ".join(IMAGE_KINDS))
        host.image_kind = options.image_kind
    if options.kernel_cmdline is not None:
        host.kernel_cmdline = options.kernel_cmdline


def _finding(rule: Rule, result: Result) -> Finding:
    return Finding(rule_id=rule.id, check=rule.check.id, severity=rule.info.severity,
                   title=rule.info.title, result=result)


ON_ERROR_CHOICES = ("code", "fail", "pass")
"""What an ``error`` result at or above the threshold does to the exit code: ``code`` exits
3 (NOT_EVALUATED), ``fail`` exits 1 as a failure would, ``pass`` ignores it (exit 0)."""


def exit_status(run: RunResult, fail_on: Severity, *, error_code_on_unevaluated: bool = True,
                on_error: str = "code") -> int:
    """Exit code for a finished scan: an :class:`aiaudit.core.errors.ExitCode` member.

    Failures at or above ``fail_on`` give 1.  Otherwise errors ("could not evaluate") at
    or above it give 3, 1 or 0 by ``on_error`` (see :data:`ON_ERROR_CHOICES`);
    ``error_code_on_unevaluated=False`` is the older spelling of ``on_error="pass"``.
    """
    at_or_above = [f for f in run.findings if f.severity.rank >= fail_on.rank]
    if any(f.status is Status.FAIL for f in at_or_above):
        return ExitCode.FAILED
    if not error_code_on_unevaluated or on_error == "pass":
        return ExitCode.OK
    if any(f.status is Status.ERROR for f in at_or_above):
        return ExitCode.FAILED if on_error == "fail" else ExitCode.NOT_EVALUATED
    return ExitCode.OK
