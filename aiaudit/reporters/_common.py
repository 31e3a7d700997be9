"""Helpers shared by the built-in reporters (not a plugin: the name starts with ``_``).

Every machine-readable format names the host the same way and computes the same stable
identity for a result, so that SARIF alerts, JUnit test names, SIEM events and Prometheus
series about one finding can be correlated across runs and formats."""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from aiaudit.core.escape import text_safe
from aiaudit.core.model import (
    DEFAULT_FILE_MODE,
    Finding,
    RunResult,
    Severity,
    SnippetKind,
    Status,
)


def host_label(run: RunResult) -> str:
    """The name that separates hosts and images in every output: the image *name* for an
    offline scan of a golden image (not its version or build, so two builds of one image
    are one "host"), otherwise the hostname (:func:`aiaudit.core.identity.scan_name`)."""
    from aiaudit.core.identity import scan_name

    return scan_name(run.host)


def safe_id(text: str) -> str:
    """``text`` reduced to characters safe in ids, class names and URIs."""
    out = re.sub(r"[^A-Za-z0-9._:@+-]+", "_", text).strip("_")
    return out or "unknown"


def fingerprint(run: RunResult, finding: Finding) -> str:
    """Stable identity of a finding across runs: hash of rule id, host and subject.

    Neither the message nor the values are part of it, so the same problem on the same host
    keeps its identity when the wrong value changes.
    """
    key = "\x1f".join((finding.rule_id, host_label(run), finding.result.subject))
    import hashlib

    return hashlib.sha256(text_safe(key).encode("utf-8")).hexdigest()


def remediation_text(finding: Finding, *, markdown: bool = False) -> str:
    """The finding's fix as text (or markdown): summary, files to drop in, commands."""
    rem = finding.result.remediation
    if rem is None:
        return ""
    lines = [rem.summary]
    if rem.manual:
        lines += ["", f"By hand: {rem.manual}"] if markdown else [f"By hand: {rem.manual}"]
    for s in rem.snippets:
        body = s.content.rstrip("\n")
        if s.kind == SnippetKind.FILE:
            mode = f" (mode {s.mode:04o})" if s.mode != DEFAULT_FILE_MODE else ""
            head = f"Drop in {s.path}{mode}:"
            lines += (["", f"{head}", "", "```", body, "```"] if markdown
                      else [head, *("    " + ln for ln in body.splitlines())])
        elif s.kind == SnippetKind.ENABLE:
            cmd = f"systemctl enable {body}"
            lines += (["", "Enable at boot:", "", "```sh", cmd, "```"] if markdown
                      else ["Enable at boot:", f"    $ {cmd}"])
        else:
            body = s.shell().rstrip("\n")
            lines += (["", "Run now:", "", "```sh", body, "```"] if markdown
                      else ["Run now:", *("    $ " + ln for ln in body.splitlines())])
    return "\n".join(lines)


def plain_expected(value: str | None) -> str | None:
    """An expected value as a person reads it: ``= 0`` is ``0``; ``None`` stays ``None``."""
    if value is None:
        return None
    v = str(value)
    return v[2:] if v.startswith("= ") else v


def evidence_text(e: object) -> str:
    """One piece of evidence as ``/abs/path:LINE: value`` or ``source = value``: absolute
    paths as on the scanned system (the root is named once, in the header)."""
    from aiaudit.core.model import Evidence

    assert isinstance(e, Evidence)
    if e.kind == "file":
        where = e.path or "/" + e.source.lstrip("/")
        if e.path and e.line is not None:
            where = f"{e.path}:{e.line}"
        return f"{where}: {e.value.strip()}" if e.value and e.value.strip() else where
    return f"{e.source} = {e.value}" if e.value is not None else e.source


SKIP_NO_USER = "no training user given"
"""Start of the skip message of the limits rules when no training user is known."""


def no_user_skips(run: RunResult) -> list[Finding]:
    """Results skipped because no training user is known (say it once, near the top)."""
    return no_user_skips_of(run.findings)


def no_user_skips_of(findings: Iterable[Finding]) -> list[Finding]:
    """Those of ``findings`` skipped because no training user is known."""
    return [f for f in findings
            if f.status is Status.SKIP and f.result.message.startswith(SKIP_NO_USER)]


def plural(n: int, word: str) -> str:
    """``1 result``, ``2 results``, ``2 fixes``."""
    return f"{n} {word}{'' if n == 1 else 'es' if word.endswith(('x', 's')) else 's'}"


def whole_scan_counts(run: RunResult) -> Mapping[str, Mapping[str, int]]:
    """Counts per severity and status of the whole scan (also when only the changes of a
    ``--changes-since`` run are listed): what the exit code is computed from."""
    return run.scan_counts if run.scan_counts is not None else run.counts_by_severity()


def verdict(run: RunResult) -> tuple[int, str]:
    """The exit code the scan's counts give and one sentence saying what it means (as
    :func:`aiaudit.core.scan.exit_status` with the default ``--on-error code``)."""
    whole = whole_scan_counts(run)
    rank = run.fail_on.rank

    def at_or_above(status: str) -> int:
        return sum(int(whole.get(s.value, {}).get(status, 0)) for s in Severity
                   if s.rank >= rank)

    at = f"at or above --fail-on {run.fail_on.value}"
    if at_or_above("fail"):
        return 1, (f"Exit code 1 (findings): {plural(at_or_above('fail'), 'failure')} {at}. "
                   "The scan itself worked; 1 means the host needs the fixes above.")
    if at_or_above("error"):
        return 3, (f"Exit code 3 (not evaluated; 0 with --on-error pass or --prolog, 1 with "
                   f"--on-error fail): no failure {at}, but "
                   f"{plural(at_or_above('error'), 'rule')} {at} could not be evaluated.")
    return 0, f"Exit code 0: no failure {at}."
