"""The ``text`` reporter: grouping, evidence and fixes, summary, plain vs coloured."""

from __future__ import annotations

from aiaudit.model import (
    Aspect,
    Evidence,
    Finding,
    HostInfo,
    Remediation,
    Result,
    RuleInfo,
    RunResult,
    Severity,
    Snippet,
    Status,
    Waiver,
)
from aiaudit.reporters.text import render

HOST = HostInfo("node1", "abc", "Debian GNU/Linux 12", "12", "debian", "6.1", "/", "live")


def _finding(rid: str, sev: Severity, status: Status, **kw) -> Finding:
    waiver = kw.pop("waiver", None)
    result = Result(status, kw.pop("subject", "vm.swappiness"), kw.pop("message", f"{rid} msg"),
                    **kw)
    return Finding(rid, "kernel.sysctl", sev, f"title of {rid}", result, waiver)


FIX = Remediation("Persist vm.swappiness = 10.", (
    Snippet.file("/etc/sysctl.d/99-zz-aiaudit.conf", "vm.swappiness = 10\n"),
    Snippet.command("sysctl -w vm.swappiness='10'")))

FINDINGS = (
    _finding("P-LOW", Severity.LOW, Status.PASS, message="passed quietly"),
    _finding("F-MED", Severity.MEDIUM, Status.FAIL, expected="<= 10", actual="60",
             aspect=Aspect.DRIFT, remediation=FIX,
             evidence=(Evidence.runtime("/proc/sys/vm/swappiness", "60"),
                       Evidence.file("/etc/sysctl.d/10.conf", 3, "vm.swappiness = 60"))),
    _finding("F-CRIT", Severity.CRITICAL, Status.FAIL, remediation=FIX),
    _finding("E-HIGH", Severity.HIGH, Status.ERROR, message="cannot read 50-x.conf"),
    _finding("S-INFO", Severity.INFO, Status.SKIP, message="no such key on this kernel"),
    _finding("W-MED", Severity.MEDIUM, Status.FAIL,
             waiver=Waiver("W-MED", "legacy node", "ops", "2999-01-01")),
)


def _run(findings=FINDINGS, notices=()) -> RunResult:
    rules = tuple(RuleInfo(f.rule_id, f.check, f.severity, f.title) for f in findings)
    return RunResult("0.1.0", "id", "2026-11-29T18:00:00Z", 0.25, HOST, "dl-training", "1.0",
                     rules, tuple(findings), Severity.MEDIUM, tuple(notices))


def test_groups_in_order_and_severity_sorted() -> None:
    text = render(_run(), {})
    heads = [line for line in text.splitlines() if line.endswith(")") and
             line.split(" (")[0] in ("Failed", "Could not evaluate", "Waived",
                                     "Not applicable", "Passed")]
    assert heads == ["Failed (2)", "Could not evaluate (1)", "Waived (1)",
                     "Not applicable (1)", "Passed (1)"]
    assert text.index("F-CRIT") < text.index("F-MED")  # critical first within a group


def test_failure_details_evidence_and_fix() -> None:
    text = render(_run(), {})
    block = text[text.index("FAIL   medium   F-MED"):text.index("Could not evaluate")]
    assert "[drift]" in block.splitlines()[0]
    assert "expected: <= 10   actual: 60" in block
    assert "evidence: /proc/sys/vm/swappiness = 60" in block
    assert "evidence: etc/sysctl.d/10.conf:3  vm.swappiness = 60" in block
    assert "fix: Persist vm.swappiness = 10." in block
    assert "# file /etc/sysctl.d/99-zz-aiaudit.conf" in block
    assert "vm.swappiness = 10" in block and "$ sysctl -w vm.swappiness='10'" in block
    assert "waived: legacy node (owner ops, expires 2999-01-01)" in text
    assert "cannot read 50-x.conf" in text


def test_pass_and_skip_terse_unless_verbose() -> None:
    plain = render(_run(), {})
    assert "passed quietly" not in plain
    assert "no such key on this kernel" in plain  # a skip always says why
    verbose = render(_run(), {"verbose": True})
    assert "passed quietly" in verbose and "title of P-LOW" in verbose


def test_header_summary_and_notices() -> None:
    text = render(_run(notices=("waiver for X matched no failure",)), {})
    lines = text.splitlines()
    assert lines[0].startswith("aiaudit 0.1.0  ruleset dl-training 1.0  host node1 (Debian")
    assert "live, root /" in lines[0]
    assert "Notices" in text and "  - waiver for X matched no failure" in text
    assert lines[-1] == ("Summary: 6 rules, 6 results: 1 pass, 2 fail (1 critical, 1 medium), "
                         "1 error, 1 skip, 1 waived  (fail-on medium)")


def test_plain_has_no_escapes_and_colour_has() -> None:
    assert "\x1b[" not in render(_run(), {"color": False})
    coloured = render(_run(), {"color": True})
    assert "\x1b[" in coloured and "F-MED" in coloured


def test_empty_run() -> None:
    text = render(_run(findings=()), {})
    assert "Failed" not in text and text.endswith(
        "Summary: 0 rules, 0 results: 0 pass, 0 fail, 0 error, 0 skip, 0 waived  "
        "(fail-on medium)\n")
