"""The ``text`` reporter: fix-first grouping, what the end of the report holds, escaping of
hostile values, wrapping, the training-user note, --changes-since totals, and the golden
report of a fixture host with no firewall."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.escape import human_safe
from aiaudit.core.model import (
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
from aiaudit.remediate.grouping import fix_groups, heredoc
from aiaudit.reporters._common import SKIP_NO_USER
from aiaudit.reporters.text import MAX_FIX_FIRST, render
from tests.helpers import FIXTURES
from tests.reporters.scans import scan_root

HOST = HostInfo("node1", "abc", "Debian GNU/Linux 12", "12", "debian", "6.1", "/", "live")
BAD_HOST = FIXTURES / "report" / "bad-host" / "root"
GOLDEN_BAD = FIXTURES / "golden" / "text" / "bad-host.txt"
REGEN = bool(os.environ.get("AIAUDIT_REGEN_GOLDEN"))


def _finding(rid: str, sev: Severity, status: Status, **kw) -> Finding:
    waiver = kw.pop("waiver", None)
    result = Result(status, kw.pop("subject", "vm.swappiness"), kw.pop("message", f"{rid} msg"),
                    **kw)
    return Finding(rid, "kernel.sysctl", sev, f"title of {rid}", result, waiver)


def _sysctl_fix(key: str, value: str) -> Remediation:
    return Remediation(f"Persist {key} = {value}.", (
        Snippet.file("/etc/sysctl.d/99-zz-aiaudit.conf", f"{key} = {value}\n"),
        Snippet.command(f"sysctl -w {key}='{value}'")))


FW_FIX = Remediation("No firewall loads at boot: write /etc/nftables.conf.", (
    Snippet.file("/etc/nftables.conf", "flush ruleset\ntable inet filter {\n}\n"),
    Snippet.command("nft -c -f /etc/nftables.conf && systemctl enable --now nftables")))

FINDINGS = (
    _finding("P-LOW", Severity.LOW, Status.PASS, message="passed quietly"),
    _finding("F-MED", Severity.MEDIUM, Status.FAIL, expected="<= 10", actual="60",
             aspect=Aspect.DRIFT, remediation=_sysctl_fix("vm.swappiness", "10"),
             evidence=(Evidence.runtime("/proc/sys/vm/swappiness", "60"),
                       Evidence.file("/etc/sysctl.d/10.conf", 3, "vm.swappiness = 60"))),
    _finding("F-LOW", Severity.LOW, Status.FAIL, subject="vm.max_map_count", expected="= 0",
             actual="1", remediation=_sysctl_fix("vm.max_map_count", "262144")),
    *(_finding(rid, sev, Status.FAIL, subject=subj, remediation=FW_FIX, expected="default deny",
               actual="no input filtering")
      for rid, sev in (("FW-DENY", Severity.HIGH), ("FW-PORTS", Severity.MEDIUM))
      for subj in ("ipv4 (boot)", "ipv6 (boot)")),
    _finding("F-CRIT", Severity.CRITICAL, Status.FAIL, subject="PermitRootLogin"),
    _finding("E-HIGH", Severity.HIGH, Status.ERROR, message="cannot read 50-x.conf"),
    _finding("S-INFO", Severity.INFO, Status.SKIP, message="no such key on this kernel"),
    _finding("S-GPU1", Severity.HIGH, Status.SKIP, message="no NVIDIA GPU"),
    _finding("S-GPU2", Severity.LOW, Status.SKIP, message="no NVIDIA GPU"),
    _finding("W-MED", Severity.MEDIUM, Status.FAIL,
             waiver=Waiver("W-MED", "legacy node", "ops", "2999-01-01")),
)


def _run(findings=FINDINGS, notices=(), **kw) -> RunResult:
    rules = tuple(RuleInfo(f.rule_id, f.check, f.severity, f.title)
                  for f in {f.rule_id: f for f in findings}.values())
    return RunResult("0.1.0", "id", "2026-11-29T18:00:00Z", 0.25, HOST, "dl-training", "1.0",
                     rules, tuple(findings), Severity.MEDIUM, tuple(notices), **kw)


def test_fix_groups_merge_identical_fixes_and_shared_dropins() -> None:
    groups = fix_groups(_run())
    # critical first (no fix given), then the firewall (4 results), then the sysctl drop-in
    assert [g.severity for g in groups] == [Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM]
    fw = groups[1]
    assert fw.rule_ids == ["FW-DENY", "FW-PORTS"] and len(fw.findings) == 4
    assert fw.subjects("FW-DENY") == ["ipv4 (boot)", "ipv6 (boot)"]
    assert fw.files == {"/etc/nftables.conf": ["flush ruleset", "table inet filter {", "}"]}
    assert fw.commands == ["nft -c -f /etc/nftables.conf && systemctl enable --now nftables"]
    sysctl = groups[2]
    assert sysctl.rule_ids == ["F-MED", "F-LOW"]
    assert sysctl.files["/etc/sysctl.d/99-zz-aiaudit.conf"] == [
        "vm.swappiness = 10", "vm.max_map_count = 262144"]
    assert "aiaudit explain F-CRIT" in groups[0].summary
    assert all(f.rule_id != "W-MED" for g in groups for f in g.findings)  # waived: no fix


def test_heredoc_delimiter_never_in_content_and_a_mode_is_set_after() -> None:
    cmd = heredoc("/etc/x y.conf", ["a", "EOF", "$HOME `x`"])
    assert cmd.splitlines()[0] == "cat > '/etc/x y.conf' <<'EOF_'"
    assert cmd.splitlines()[-1] == "EOF_"
    private = heredoc("/etc/x y.conf", ["a"], 0o600)
    assert private.splitlines()[-2:] == ["EOF", "chmod 0600 '/etc/x y.conf'"]


def test_a_heredoc_command_is_just_a_command() -> None:
    """A third-party fix written as one shell command that happens to hold a here-document
    is not parsed back into a file: it is a command, printed as given."""
    cmd = "cat > /etc/a.conf <<'EOF'\nx = 1\nEOF\nsysctl -p"
    rem = Remediation("Write it.", (Snippet.command(cmd),))
    (g,) = fix_groups(_run((_finding("H", Severity.HIGH, Status.FAIL, remediation=rem),)))
    assert g.files == {} and g.commands == [cmd]
    assert f"\n{cmd}\n" in render(_run((_finding("H", Severity.HIGH, Status.FAIL,
                                                  remediation=rem),)), {})


def test_a_private_file_keeps_its_mode_when_fixes_merge() -> None:
    """Two fixes writing one file: the file gets only the permissions both allow, and the
    text report's paste block sets it."""
    a = Remediation("A.", (Snippet.file("/etc/x.conf", "a = 1\n", mode=0o600),))
    b = Remediation("B.", (Snippet.file("/etc/x.conf", "b = 2\n"),))
    run = _run((_finding("A", Severity.HIGH, Status.FAIL, remediation=a),
                _finding("B", Severity.HIGH, Status.FAIL, subject="b", remediation=b)))
    (g,) = fix_groups(run)
    assert g.modes == {"/etc/x.conf": 0o600}
    assert "\nb = 2\nEOF\nchmod 0600 /etc/x.conf\n" in render(run, {})


def test_report_order_details_then_fix_first_then_summary() -> None:
    text = render(_run(), {})
    lines = text.splitlines()
    i_fail = text.index("Failures (7)")
    i_err = text.index("Could not evaluate (1)")
    i_skip = text.index("Not applicable (3)")
    i_pass = text.index("Passed: 1 result")
    i_first = text.index("Fix first (3 fixes for 7 failures")
    i_sum = text.index("Summary: ")
    assert i_fail < i_err < i_skip < i_pass < i_first < i_sum
    assert lines[-2] == ("Summary: 11 rules, 13 results: 7 fail (1 critical, 2 high, 3 medium, "
                         "1 low), 1 error, 1 pass, 3 not applicable, 1 waived")
    assert lines[-1].startswith("Exit code 1 (findings): 6 failures at or above --fail-on "
                                "medium.")


def test_each_fix_is_printed_once_and_pastes() -> None:
    text = render(_run(), {})
    assert text.count("No firewall loads at boot") == 1
    assert text.count("\nflush ruleset\n") == 1 and text.count("sysctl -w vm.swappiness") == 0
    # the drop-in's keys are loaded with one command, not one `sysctl -w` per key
    assert text.count("sysctl -p /etc/sysctl.d/99-zz-aiaudit.conf") == 1
    lines = text.splitlines()
    # the here-document starts at column 0 and its delimiter is alone on a line: it pastes
    start = lines.index("cat > /etc/nftables.conf <<'EOF'")
    assert lines[start + 1:start + 5] == ["flush ruleset", "table inet filter {", "}", "EOF"]
    # the directory is made first (/etc/default/grub.d may not exist yet)
    assert "mkdir -p /etc/sysctl.d && cat > /etc/sysctl.d/99-zz-aiaudit.conf <<'EOF'" in lines
    # the fix-first entry names every rule and how many of its results it fixes
    assert "     fixes FW-DENY (2 results), FW-PORTS (2 results)" in lines


def test_result_details_have_no_python_values_and_absolute_paths() -> None:
    text = render(_run(), {})
    assert "None" not in text
    assert "= 0" not in text.replace("vm.swappiness = ", "")  # "expected = 0" reads as 0
    assert "expected 0, actual 1" in text
    assert ("expected <= 10, actual 60; evidence: /proc/sys/vm/swappiness = 60; "
            "/etc/sysctl.d/10.conf:3: vm.swappiness = 60") in text
    assert "vm.swappiness [drift]: F-MED msg" in text
    assert "waived: legacy node (owner ops, expires 2999-01-01)" in text
    assert "cannot read 50-x.conf" in text


def test_pass_is_a_count_and_skips_are_grouped_by_reason() -> None:
    plain = render(_run(), {})
    assert "passed quietly" not in plain and "P-LOW" not in plain
    # a reason shared by rules: one line, the rules named with -v (issue 30)
    assert "  no NVIDIA GPU: 2 rules\n" in plain and "S-GPU1" not in plain
    verbose = render(_run(), {"verbose": True})
    assert "passed quietly" in verbose and "title of P-LOW" in verbose
    assert "S-GPU2  title of S-GPU2" in verbose


def test_fix_first_is_capped_so_the_end_fits_a_screen() -> None:
    many = tuple(_finding(f"R{i:02d}", Severity.LOW, Status.FAIL, subject=f"k{i}",
                          remediation=Remediation(f"fix {i}", (Snippet.command(f"c{i}"),)))
                 for i in range(MAX_FIX_FIRST + 4))
    lines = render(_run(many), {}).splitlines()
    tail = "\n".join(lines[-20:])
    n = MAX_FIX_FIRST + 4
    assert f"Fix first ({n} fixes for {n} failures" in tail
    assert f"and 4 more fixes (4 results, low at worst): Fix {MAX_FIX_FIRST + 1} onwards" in tail


def test_training_user_note_once_near_the_top() -> None:
    msg = (f"{SKIP_NO_USER}: pass --user NAME, run under Slurm (SLURM_JOB_USER) or sudo "
           "(SUDO_USER), or set settings.user in the ruleset")
    skips = tuple(_finding(f"LIMITS-{i}", Severity.HIGH, Status.SKIP, subject="training user",
                           message=msg) for i in range(3))
    text = render(_run(FINDINGS + skips), {})
    lines = text.splitlines()
    assert lines[2].startswith("Note: no training user is known: 3 rules were not evaluated "
                               "(LIMITS-0, ")
    assert "--user NAME" in lines[2]
    assert text.count(msg) == 0  # said once, in the note, not again per rule
    # the skipped list does not say it again (-v lists each rule with its reason)
    assert not any(ln.startswith("  no training user is known") for ln in lines)


def test_skip_message_prefix_is_the_limits_checks() -> None:
    from aiaudit.linux.accounts.users import NO_USER

    assert NO_USER.startswith(SKIP_NO_USER)


def test_header_names_the_training_user_and_its_source() -> None:
    text = render(_run(training_user="alice", training_user_source="$SUDO_USER"), {})
    assert text.splitlines()[1] == ("live scan of the running system, started "
                                    "2026-11-29T18:00:00Z, took 0.25s; training user alice "
                                    "(from $SUDO_USER)")


def test_offline_header_names_the_root_once() -> None:
    run = _run()
    run = replace(run, host=replace(run.host, mode="offline", root="/mnt/img"))
    text = render(run, {})
    assert text.splitlines()[1].startswith(
        "offline scan of root /mnt/img (paths below are as on the scanned system)")
    assert text.count("/mnt/img") == 1


def test_changes_summary_agrees_with_the_exit_code() -> None:
    """--changes-since shows one fixed result, but the whole scan still fails: the summary
    says so (its counts decide the exit code), and lists the changes shown."""
    from aiaudit.modes.changes import changes_since

    previous = _run()
    fixed = replace(FINDINGS[1], result=replace(FINDINGS[1].result, status=Status.PASS))
    current = _run(tuple(fixed if f is FINDINGS[1] else f for f in FINDINGS))
    shown = changes_since(current, previous, "prev.json")
    assert len(shown.findings) == 1
    lines = render(shown, {}).splitlines()
    assert lines[-3] == ("Changes shown: 1 result (1 fixed); the totals below are of the whole "
                         "scan and decide the exit code")
    assert lines[-2].startswith("Summary: 11 rules, 13 results: 6 fail")
    assert lines[-1].startswith("Exit code 1 (findings): 5 failures at or above")


def test_exit_code_meaning_for_errors_and_clean_runs() -> None:
    err = _run((_finding("E", Severity.HIGH, Status.ERROR),))
    assert render(err, {}).splitlines()[-1].startswith(
        "Exit code 3 (not evaluated; 0 with --on-error pass")
    ok = _run((_finding("P", Severity.HIGH, Status.PASS),))
    assert render(ok, {}).splitlines()[-1] == (
        "Exit code 0: no failure at or above --fail-on medium.")


HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\rCR\x00NUL\x08\x9b\u202eRTL\nLF"
"""Retitle (OSC 0), clear screen, CR, NUL, BS, 8-bit CSI, a bidi override and a line feed."""


def _hostile_run() -> RunResult:
    h = HOSTILE
    rem = Remediation(f"fix {h}", (Snippet.file(f"/etc/{h}.conf", f"key = {h}\n"),
                                   Snippet.command(f"echo {h}")), manual=f"by hand {h}")
    findings = (
        Finding(f"R-{h}", "c", Severity.HIGH, f"title {h}", Result(
            Status.FAIL, f"subj {h}", f"msg {h}", expected=f"exp {h}", actual=f"act {h}",
            evidence=(Evidence.file(f"/etc/{h}", 1, f"line {h}"),
                      Evidence.runtime(f"/proc/{h}", f"val {h}"),
                      Evidence.command(f"cmd {h}", f"out {h}")),
            remediation=rem, data={"change": {"kind": f"added {h}", "previous_status": h}})),
        Finding("W", "c", Severity.LOW, f"t {h}", Result(Status.FAIL, "s", f"m {h}"),
                Waiver("W", f"reason {h}", f"owner {h}", f"exp {h}")),
        Finding("S", "c", Severity.LOW, f"t {h}", Result(Status.SKIP, "s", f"skip {h}")),
        Finding("P", "c", Severity.LOW, f"t {h}", Result(Status.PASS, "s", f"pass {h}")),
        Finding("E", "c", Severity.LOW, f"t {h}", Result(Status.ERROR, "s", f"err {h}")),
    )
    host = HostInfo(f"host {h}", h, f"os {h}", h, h, h, f"/root {h}", "offline",
                    image_id=f"img {h}")
    rules = tuple(RuleInfo(f.rule_id, f.check, f.severity, f.title, remediation=f"generic {h}")
                  for f in findings)
    return RunResult(f"v {h}", h, h, 0.0, host, f"rs {h}", f"1 {h}", rules, findings,
                     Severity.LOW, (f"notice {h}",), training_user=f"u {h}",
                     training_user_source=f"src {h}")


@pytest.mark.parametrize("options", [{}, {"color": True, "width": 5000}, {"verbose": True},
                                     {"verbose": True, "color": True, "width": 5000}])
def test_hostile_values_are_escaped_in_every_field(options: dict) -> None:
    text = render(_hostile_run(), options)
    if options.get("color"):
        # rich's own colour sequences are the only escapes: strip them, then none may remain

        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    for bad in ("\x1b", "\x07", "\r", "\x00", "\x08", "\x9b", "\u202e"):
        assert bad not in text, repr(bad)
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\x0dCR\\x00NUL\\x08\\x9b\\u202eRTL\\nLF" in text
    escaped = human_safe(HOSTILE)
    # every field reached the output (escaped): host, user, titles, messages, values, fixes
    # a rule with one result is one line, its title left to -v, and so is the reason of a
    # rule skipped for a reason of its own (issue 30)
    only_v = ("title ", "skip ") if options.get("verbose") else ()
    for label in ("host ", "u ", *only_v, "subj ", "msg ", "exp ", "act ", "line ",
                  "val ", "out ", "fix ", "by hand ", "notice ", "reason ",
                  "owner ", "err ", "added "):
        # a plain line over 300 characters is wrapped at a space: join it back
        assert f"{label}{escaped}" in re.sub(r"\n +", " ", text), label
    # multi-line snippets keep their line feeds (a here-document must) but nothing else
    first, second = HOSTILE.split("\n")
    assert f"\necho {human_safe(first)}\n{human_safe(second)}\n" in text
    assert f"\nkey = {human_safe(first)}\n{human_safe(second)}\n" in text
    if options.get("verbose"):
        assert f"pass {escaped}" in text


def test_plain_has_no_escapes_and_colour_wraps_at_words() -> None:
    assert "\x1b[" not in render(_run(), {"color": False})
    long = _finding("L", Severity.HIGH, Status.FAIL, message=" ".join(["word"] * 60))
    coloured = render(_run((long,)), {"color": True, "width": 50})
    import re

    plain = re.sub(r"\x1b\[[0-9;]*m", "", coloured).splitlines()
    assert all(len(line) <= 50 for line in plain)
    body = [line for line in plain if "word" in line]
    assert len(body) > 3 and all(line.split()[-1] in ("word", "msg") or
                                 line.rstrip().endswith("word") for line in body[:-1])
    assert all(line == line.rstrip() for line in plain)  # no padding to the width
    # shell lines are never wrapped (a wrapped command does not paste)
    cmd = "echo " + "x" * 120
    run = _run((_finding("C", Severity.HIGH, Status.FAIL,
                         remediation=Remediation("r", (Snippet.command(cmd),))),))
    assert cmd in re.sub(r"\x1b\[[0-9;]*m", "", render(run, {"color": True, "width": 50}))


def test_empty_run() -> None:
    text = render(_run(findings=()), {})
    assert "Failures" not in text and "Fix first" not in text
    assert text.endswith("Summary: 0 rules, 0 results: 0 fail, 0 error, 0 pass, "
                         "0 not applicable, 0 waived\n"
                         "Exit code 0: no failure at or above --fail-on medium.\n")


def _bad_host_report() -> str:
    run = scan_root(BAD_HOST, fail_on=Severity.MEDIUM)  # the CLI's default threshold
    run = replace(run, started="2026-01-02T03:04:05Z", duration_s=0.5,
                  host=replace(run.host, root="/mnt/bad-host"))
    return render(run, {})


def test_golden_bad_host_without_firewall() -> None:
    """A fixture image with no firewall, password SSH and untuned sysctls: the whole report
    is pinned; the firewall fix is printed once for its 4 results, no remediation text
    appears twice, and the last 20 lines hold the fix-first list and the summary."""
    text = _bad_host_report()
    if REGEN:
        GOLDEN_BAD.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN_BAD.write_text(text, encoding="utf-8")
    assert text == GOLDEN_BAD.read_text(encoding="utf-8")
    lines = text.splitlines()
    tail = lines[-20:]
    assert any(line.startswith("Fix first (") for line in tail)
    assert tail[-2].startswith("Summary: ") and tail[-1].startswith("Exit code 1 (findings)")
    assert any("1. high, " in line and "firewall" in line for line in tail) or any(
        "FW-DEFAULT-DENY-INPUT (2 results)" in line for line in tail)
    assert text.count("\nflush ruleset\n") == 1
    run = scan_root(BAD_HOST)
    fails = [f for f in run.findings if f.status is Status.FAIL]
    for f in fails:
        rem = f.result.remediation
        assert rem is not None
        assert text.count(rem.summary) <= 1, rem.summary
        for s in rem.snippets:
            if s.kind == "command":
                # as a line of its own, once
                assert text.count(f"\n{s.content}\n") == 1, s.content


def test_golden_fixture_root_is_the_one_in_the_tree() -> None:
    assert Path(BAD_HOST, "etc", "ssh", "sshd_config").is_file()
    assert not Path(BAD_HOST, "etc", "nftables.conf").exists()


def test_cli_header_says_where_the_user_came_from_and_json_keeps_it(tmp_path: Path) -> None:
    """The header names the training user's source (``$SUDO_USER`` counts only for the
    real ``/``: scanning another root, sudo's caller is no user of that root)."""
    import json

    import jsonschema

    from aiaudit.core.ruleset import schema
    from aiaudit.core.serialize import run_from_dict
    from tests.helpers import cli

    sudo_only = cli("scan", "--root", str(BAD_HOST), "--offline",
                    env={"SUDO_USER": "runner", "SLURM_JOB_USER": ""})
    assert "training user runner" not in sudo_only.out
    env = {"SUDO_USER": "runner", "SLURM_JOB_USER": "train"}
    r = cli("scan", "--root", str(BAD_HOST), "--offline", env=env)
    assert r.code == 1, r.err
    header = r.out.splitlines()[1]
    assert header.endswith("; training user train (from $SLURM_JOB_USER)")
    assert "no training user is known" not in r.out
    doc = json.loads(cli("scan", "--root", str(BAD_HOST), "--offline", "--format", "json",
                         env=env).out)
    jsonschema.validate(doc, schema("report.schema.json"))
    assert doc["training_user"] == {"name": "train", "source": "$SLURM_JOB_USER"}
    run = run_from_dict(doc)
    assert (run.training_user, run.training_user_source) == ("train", "$SLURM_JOB_USER")


def test_changes_run_keeps_whole_scan_counts_through_json(tmp_path: Path) -> None:
    import json

    import jsonschema

    from aiaudit.core.ruleset import schema
    from aiaudit.core.serialize import run_dict, run_from_dict
    from aiaudit.modes.changes import changes_since

    shown = changes_since(_run(), None, "state.json")
    doc = json.loads(json.dumps(run_dict(shown)))
    jsonschema.validate(doc, schema("report.schema.json"))
    assert doc["scan_summary"]["by_severity"]["critical"]["fail"] == 1
    assert render(run_from_dict(doc), {}) == render(shown, {})


def test_variants_writing_the_same_file_are_one_fix_said_once() -> None:
    """The boot and the running variant of the firewall fix write the same nftables.conf
    and differ in the command that loads it: one fix, one summary, both commands."""
    conf = Snippet.file("/etc/nftables.conf", "flush ruleset\n")
    boot = Remediation("No firewall loads at boot: write it.",
                       (conf, Snippet.command("systemctl enable --now nftables")))
    now = Remediation("Replace it and load it.",
                      (conf, Snippet.command("systemctl reload nftables")))
    grub_a = Remediation("Add a=1 to the kernel command line.", (
        Snippet.file("/etc/default/grub.d/99-aiaudit.cfg", "A=1\n"),))
    grub_b = Remediation("Add b=2 to the kernel command line.", (
        Snippet.file("/etc/default/grub.d/99-aiaudit.cfg", "B=2\n"),))
    run = _run((_finding("FW", Severity.HIGH, Status.FAIL, subject="boot", remediation=boot),
                _finding("FW", Severity.HIGH, Status.FAIL, subject="now", remediation=now),
                _finding("GA", Severity.LOW, Status.FAIL, remediation=grub_a),
                _finding("GB", Severity.LOW, Status.FAIL, remediation=grub_b)))
    fw, grub = fix_groups(run)
    assert fw.summary == "No firewall loads at boot: write it." and fw.also == []
    assert fw.commands == ["systemctl enable --now nftables", "systemctl reload nftables"]
    # different lines for one file: both summaries stay (they say different things)
    assert grub.also == ["Add b=2 to the kernel command line."]
    assert grub.files == {"/etc/default/grub.d/99-aiaudit.cfg": ["A=1", "B=2"]}
    text = render(run, {})
    assert text.count("\nflush ruleset\n") == 1 and "Replace it and load it" not in text


@pytest.mark.parametrize("fmt", ["text", "html"])
def test_hostile_host_tree_end_to_end(tmp_path: Path, fmt: str) -> None:
    """A scanned image whose hostname, file names and config values carry terminal escapes:
    the CLI's report shows them escaped, and no control character reaches stdout."""
    from tests.helpers import cli

    root = tmp_path / "root"
    (root / "etc" / "sysctl.d").mkdir(parents=True)
    (root / "etc" / "hostname").write_text("evil\x1b]0;owned\x07\n")
    (root / "etc" / "sysctl.d" / "10-\x1b[2J\r.conf").write_text(
        "vm.swappiness = 60\x1b[31m\n")
    (root / "etc" / "os-release").write_text('PRETTY_NAME="Deb\x1b[5mian\x9b"\nID=debian\n')
    r = cli("scan", "--root", str(root), "--offline", "--format", fmt,
            "--only", "SYSCTL-VM-SWAPPINESS")
    assert r.code in (0, 1, 3), r.err
    for bad in ("\x1b", "\x07", "\r", "\x9b"):
        assert bad not in r.out, repr(bad)
    assert "evil\\x1b]0;owned\\x07" in r.out
    assert "10-\\x1b[2J\\x0d.conf" in r.out


def test_sysctl_w_of_the_dropin_keys_becomes_one_load() -> None:
    """``sysctl -w`` of exactly what the drop-in writes is ``sysctl -p FILE``; a command
    for another key or another value is kept as it is."""
    from aiaudit.remediate.grouping import _sysctl_load

    files = {"/etc/sysctl.d/99-zz-aiaudit.conf": ["vm.swappiness = 10", "kernel.pid_max = 9"],
             "/etc/other.conf": ["x = 1"]}
    cmds = ["sysctl -w vm.swappiness='10'", "echo hi", "sysctl -w kernel.pid_max='9'",
            "sysctl -w vm.max_map_count='262144'", "sysctl -w vm.swappiness='5'"]
    assert _sysctl_load(files, cmds) == [
        "sysctl -p /etc/sysctl.d/99-zz-aiaudit.conf", "echo hi",
        "sysctl -w vm.max_map_count='262144'", "sysctl -w vm.swappiness='5'"]


_PIECES = ["a", "bb", "ccc", " ", "  ", "\t", "\n", "\r", "\x0b", "\u00a0", "\u2003", "-",
           "x" * 30]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=60).map("".join),
       st.integers(min_value=8, max_value=60), st.integers(min_value=0, max_value=6))
def test_wrapping_is_textwraps(text: str, width: int, indent: int) -> None:
    """The plain report's wrapping is the standard library's, line for line."""
    import textwrap

    from aiaudit.reporters.text import wrap_words

    assert wrap_words(text, width, " " * indent) == textwrap.wrap(
        text, width, subsequent_indent=" " * indent, break_long_words=False,
        break_on_hyphens=False)
