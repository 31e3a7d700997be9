"""The command line: every error path (exit code 2, one line, no traceback), the
subcommands, exit codes 0/1/3, thresholds, selection, outputs and colour."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from aiaudit import __version__
from tests.helpers import FIXTURES, cli

RS = FIXTURES / "rulesets"
SMALL = str(RS / "small.yaml")
GOOD = {"/etc/sysctl.d/10-x.conf": "vm.swappiness = 5\nvm.max_map_count = 262144\n"}
"""Both SMALL rules pass offline."""
SWAP_BAD = {"/etc/sysctl.d/10-x.conf": "vm.swappiness = 60\nvm.max_map_count = 262144\n"}
"""SMALL-SWAPPINESS (medium) fails, SMALL-MAX-MAP-COUNT (high) passes."""


def _usage_error(res, *needles: str) -> None:
    """Exit 2, every stderr line an ``aiaudit: error:`` line, no traceback."""
    assert res.code == 2, (res.out, res.err)
    assert "Traceback" not in res.err and res.out == ""
    lines = res.err.strip().splitlines()
    assert lines and all(line.startswith(("aiaudit: error:", "usage:", "aiaudit scan: error",
                                          "aiaudit: error")) for line in lines), res.err
    for n in needles:
        assert n in res.err, res.err


# ------------------------------------------------------------------ error paths
def test_unknown_ruleset() -> None:
    res = cli("scan", "--ruleset", "nope", "--root", "/", "--offline")
    _usage_error(res, "unknown ruleset 'nope'", "dl-training")
    assert len(res.err.strip().splitlines()) == 1


def test_missing_ruleset_file(tmp_path: Path) -> None:
    _usage_error(cli("rules", "--ruleset", str(tmp_path / "x.yaml")), "cannot read ruleset")


def test_malformed_yaml_has_file_line_col() -> None:
    res = cli("validate", str(RS / "malformed.yaml"))
    _usage_error(res, "malformed.yaml:6:4:", "invalid YAML")
    assert len(res.err.strip().splitlines()) == 1


def test_schema_errors_all_reported_with_location() -> None:
    res = cli("validate", str(RS / "schema-errors.yaml"))
    _usage_error(res)
    lines = res.err.strip().splitlines()
    want = ["schema-errors.yaml:1:1: (top): unknown key(s) ('colour'",
            "schema-errors.yaml:1:10: ruleset: 'Bad Name' does not match",
            "schema-errors.yaml:5:9: rules/0/id: 'lower-case'",
            "schema-errors.yaml:7:15: rules/0/severity: 'urgent'",
            "schema-errors.yaml:9:5: rules/1: 'title' is a required property",
            # the same run also binds the rules and checks their params (issue 30)
            "schema-errors.yaml:5:5: rules/0/params: 'key' is a required property",
            "schema-errors.yaml:9:5: rules/1/params: the rule states no expectation"]
    assert len(lines) == len(want) + 2  # each rule also lacks an expectation
    for w in want:
        assert any(w in line for line in lines), (w, lines)


@pytest.mark.parametrize("name,needles", [
    ("unknown-check.yaml", ["unknown-check.yaml:5:12:", "unknown check 'kernel.nosuch'",
                            "known: ", "kernel.sysctl"]),
    ("bad-params.yaml", ["bad-params.yaml:13:13:", "'colour' was unexpected", "(rule BAD-OP)",
                         "'lessish' is not one of", "bad-params.yaml:18:13:",
                         "'key' is a required property (rule NO-KEY)"]),
    ("duplicate-ids.yaml", ["duplicate-ids.yaml:9:9: duplicate rule id 'SAME'",
                            "first at", "duplicate-ids.yaml:4:5"]),
    ("duplicate-keys.yaml", ["duplicate-keys.yaml:3:1: duplicate key 'version'"]),
    ("cycle-a.yaml", ["cycle-b.yaml:3:10: 'extends' cycle:", "cycle-a.yaml -> "]),
    ("override-unknown.yaml", ["override-unknown.yaml:5:", "override of unknown rule "
                               "'NOT-THERE'"]),
    ("not-a-mapping.yaml", ["a ruleset must be a mapping"]),
    ("empty.yaml", ["a ruleset must be a mapping"]),
    ("extends-missing.yaml", ["extends-missing.yaml:4:10: extends:", "no-such-file.yaml",
                              "cannot read ruleset"]),
    ("extends-unknown.yaml", ["extends-unknown.yaml:4:10: extends: unknown ruleset "
                              "'no-such-shipped-ruleset'"]),
])
def test_invalid_rulesets(name: str, needles: list[str]) -> None:
    for cmd in (("validate", str(RS / name)), ("scan", "--ruleset", str(RS / name),
                                                "--root", "/", "--offline")):
        _usage_error(cli(*cmd), *needles)


def test_bad_params_are_all_reported() -> None:
    res = cli("validate", str(RS / "bad-params.yaml"))
    assert len(res.err.strip().splitlines()) == 3


@pytest.mark.parametrize("flag", ["--only", "--skip"])
def test_unknown_rule_selection(flag: str, make_root) -> None:
    res = cli("scan", "--ruleset", SMALL, "--root", str(make_root(GOOD)), flag, "NOPE")
    _usage_error(res, "unknown rule 'NOPE' in ruleset small")


def test_bad_root(tmp_path: Path) -> None:
    _usage_error(cli("scan", "--root", str(tmp_path / "missing")), "not a directory")
    f = tmp_path / "file"
    f.write_text("")
    _usage_error(cli("scan", "--root", str(f)), "not a directory")


def test_bad_format(make_root) -> None:
    _usage_error(cli("scan", "--root", str(make_root(GOOD)), "--format", "xml"),
                 "unknown format 'xml'", "json", "text")
    _usage_error(cli("scan", "--root", str(make_root(GOOD)), "--output", "xml:out"),
                 "unknown format 'xml'")


@pytest.mark.parametrize("args,needle", [
    (["scan", "--fail-on", "urgent"], "invalid choice"),
    (["scan", "--timeout", "0"], "must be > 0"),
    (["scan", "--timeout", "soon"], "not a number"),
    (["scan", "--live", "--offline"], "not allowed with"),
    (["frobnicate"], "invalid choice"),
])
def test_argument_errors(args: list[str], needle: str) -> None:
    res = cli(*args)
    assert res.code == 2 and needle in res.err and "Traceback" not in res.err


def test_unwritable_output(make_root, tmp_path: Path) -> None:
    res = cli("scan", "--ruleset", SMALL, "--root", str(make_root(GOOD)),
              "--output", str(tmp_path / "no" / "dir" / "report.json"))
    _usage_error(res, "cannot write")


def test_no_command_prints_help() -> None:
    res = cli()
    assert res.code == 2 and "usage:" in res.err and "exit codes:" in res.err


# ------------------------------------------------------------------ subcommands
@pytest.mark.parametrize("name,summary", [
    ("small.yaml", "small 2.1, 2 rules"),
    ("extends.yaml", "small-site 1, 2 rules"),
    ("extends-shipped.yaml", "dl-site 1, "),  # dl-training grows with every check family
])
def test_validate_ok(name: str, summary: str) -> None:
    res = cli("validate", str(RS / name))
    assert res.code == 0 and res.err == ""
    assert res.out.startswith(f"{RS / name}: ok ({summary}")


def test_validate_relative_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(RS)
    assert cli("validate", "small.yaml").code == 0


def test_rules_lists_id_severity_title() -> None:
    res = cli("rules", "--ruleset", str(RS / "extends.yaml"))
    assert res.code == 0
    lines = res.out.splitlines()
    assert lines[0] == "# small-site 1: 2 of 2 rules"
    assert lines[2].split()[:4] == ["SMALL-SWAPPINESS", "critical", "vm.swappiness", "<="]
    assert lines[3].split()[:2] == ["SITE-DIRTY-RATIO", "low"]
    assert "SMALL-MAX-MAP-COUNT" not in res.out  # disabled by the override
    shipped = cli("rules")
    assert shipped.code == 0 and "SYSCTL-VM-SWAPPINESS" in shipped.out


def test_explain() -> None:
    res = cli("explain", "SYSCTL-VM-SWAPPINESS")
    assert res.code == 0
    for needle in ("SYSCTL-VM-SWAPPINESS: Ensure swappiness", "severity: medium",
                   "check: kernel.sysctl", "Why it matters:", "With the default of 60",
                   "What it checks:", "systemd-sysctl", "How to fix:",
                   "References:", "https://docs.kernel.org/admin-guide/sysctl/vm.html",
                   "key: vm.swappiness", "expected: vm.swappiness <= 10"):
        assert needle in res.out, needle
    _usage_error(cli("explain", "NOPE"), "unknown rule 'NOPE'")


def test_explain_override_shows_merged_params() -> None:
    res = cli("explain", "SMALL-SWAPPINESS", "--ruleset", str(RS / "extends.yaml"))
    assert "severity: critical" in res.out and "    value: 1\n" in res.out


def test_version() -> None:
    res = cli("--version")
    assert res.code == 0 and res.out.strip() == f"aiaudit {__version__}"


# ------------------------------------------------------------------ exit codes
def test_exit_0_and_1(make_root) -> None:
    ok = cli("scan", "--ruleset", SMALL, "--root", str(make_root(GOOD)))
    assert ok.code == 0, ok.out + ok.err
    assert "0 fail, 0 error, 2 pass" in ok.out and "offline" in ok.out
    bad = cli("scan", "--ruleset", SMALL, "--root", str(make_root(SWAP_BAD)))
    assert bad.code == 1
    assert "FAIL" in bad.out and "SMALL-SWAPPINESS" in bad.out


def test_exit_3_error_at_threshold_without_failure(make_root) -> None:
    root = make_root({**GOOD, "/etc/sysctl.d/50-bin.conf": b"\x00\x01"})
    res = cli("scan", "--ruleset", SMALL, "--root", str(root))
    assert res.code == 3, res.out
    assert "Could not evaluate" in res.out and "binary content" in res.out
    # the error is below the threshold: exit 0
    assert cli("scan", "--ruleset", SMALL, "--root", str(root), "--fail-on", "critical"
               ).code == 0
    # a failure wins over an error
    root2 = make_root({**SWAP_BAD, "/etc/sysctl.d/50-bin.conf": b"\x00"})
    assert cli("scan", "--ruleset", SMALL, "--root", str(root2)).code == 3  # error, no fail
    assert cli("scan", "--ruleset", SMALL, "--root", str(make_root(SWAP_BAD)),
               "--fail-on", "low").code == 1


@pytest.mark.parametrize("fail_on,code", [("info", 1), ("low", 1), ("medium", 1),
                                          ("high", 0), ("critical", 0)])
def test_fail_on_threshold(make_root, fail_on: str, code: int) -> None:
    res = cli("scan", "--ruleset", SMALL, "--root", str(make_root(SWAP_BAD)),
              "--fail-on", fail_on)
    assert res.code == code
    assert f"fail-on {fail_on}" in res.out


def test_ruleset_settings_fail_on(make_root) -> None:
    root = make_root({"/etc/sysctl.d/10-x.conf": "vm.swappiness = 1\nvm.dirty_ratio = 40\n"})
    # extends.yaml sets fail_on: low; its SITE-DIRTY-RATIO (low) fails
    assert cli("scan", "--ruleset", str(RS / "extends.yaml"), "--root", str(root)).code == 1
    assert cli("scan", "--ruleset", str(RS / "extends.yaml"), "--root", str(root),
               "--fail-on", "medium").code == 0


def test_only_and_skip(make_root) -> None:
    root = str(make_root(SWAP_BAD))
    only = cli("scan", "--ruleset", SMALL, "--root", root, "--only", "SMALL-MAX-MAP-COUNT",
               "--format", "json")
    assert only.code == 0
    assert [r["rule_id"] for r in json.loads(only.out)["results"]] == ["SMALL-MAX-MAP-COUNT"]
    skip = cli("scan", "--ruleset", SMALL, "--root", root, "--skip", "SMALL-MAX-MAP-COUNT",
               "--format", "json")
    assert skip.code == 1
    assert [r["rule_id"] for r in json.loads(skip.out)["results"]] == ["SMALL-SWAPPINESS"]


def test_output_files(make_root, tmp_path: Path) -> None:
    out_json, out_text = tmp_path / "r.json", tmp_path / "r.txt"
    res = cli("scan", "--ruleset", SMALL, "--root", str(make_root(SWAP_BAD)),
              "--output", f"json:{out_json}", "--output", str(out_text))
    assert res.code == 1
    assert res.out == ""  # every report went to a file
    doc = json.loads(out_json.read_text())
    assert doc["ruleset"] == {"name": "small", "version": "2.1",
                              "source": os.path.realpath(SMALL)}
    assert doc["summary"]["by_status"]["fail"] == 1
    assert "Summary:" in out_text.read_text() and "\x1b[" not in out_text.read_text()


def test_live_flag_reads_proc_under_root(make_root) -> None:
    root = make_root({**GOOD, "/proc/sys/vm/swappiness": "60\n",
                      "/proc/sys/vm/max_map_count": "262144\n"})
    res = cli("scan", "--ruleset", SMALL, "--root", str(root), "--live", "--format", "json")
    assert res.code == 1
    doc = json.loads(res.out)
    assert doc["host"]["mode"] == "live"
    swap = next(r for r in doc["results"] if r["rule_id"] == "SMALL-SWAPPINESS")
    assert swap["aspect"] == "drift" and swap["actual"] == "60"


# ------------------------------------------------------------------ colour and processes
def test_plain_text_when_not_a_tty(make_root) -> None:
    res = cli("scan", "--ruleset", SMALL, "--root", str(make_root(SWAP_BAD)))
    assert "\x1b[" not in res.out


def _run_on_tty(args: list[str], env: dict[str, str]) -> str:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "aiaudit", *args], stdout=slave,
                            stderr=subprocess.DEVNULL, env=env, cwd="/")
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("no_color", [False, True])
def test_colour_on_tty_unless_no_color(make_root, no_color: bool) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env["TERM"] = "xterm"
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    if no_color:
        env["NO_COLOR"] = "1"
    out = _run_on_tty(["scan", "--ruleset", SMALL, "--root", str(make_root(SWAP_BAD))], env)
    assert "SMALL-SWAPPINESS" in out
    assert ("\x1b[" in out) is (not no_color)


def test_python_dash_m_subprocess(make_root) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-m", "aiaudit", "scan", "--ruleset", SMALL,
                           "--root", str(make_root(SWAP_BAD)), "--format", "json"],
                          capture_output=True, text=True, env=env, cwd="/", timeout=120)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["summary"]["by_status"]["fail"] == 1
    bad = subprocess.run([sys.executable, "-m", "aiaudit", "scan", "--ruleset", "nope"],
                         capture_output=True, text=True, env=env, cwd="/", timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aiaudit: error: unknown ruleset 'nope'")


def test_fast_exit_loses_no_output(make_root, tmp_path) -> None:
    """``run`` leaves with os._exit: stdout (a pipe, larger than its buffer), --output files
    and the exit code are all complete, and a reader that stops early gets one message, no
    traceback."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    root = str(make_root(SWAP_BAD))
    report = tmp_path / "r.json"
    scan = [sys.executable, "-m", "aiaudit", "scan", "--ruleset", "dl-training", "--root", root]
    proc = subprocess.run([*scan, "--format", "json"], capture_output=True, text=True,
                          env=env, cwd="/", timeout=120)
    assert proc.returncode in (1, 3), proc.stderr
    assert len(proc.stdout) > 65536, "more than one pipe buffer"
    assert len(json.loads(proc.stdout)["results"]) > 50
    to_file = subprocess.run([*scan, "-o", f"junit:{report}"], capture_output=True, text=True,
                             env=env, cwd="/", timeout=120)
    assert to_file.returncode == proc.returncode
    assert report.read_text().rstrip().endswith("</testsuites>")
    head = subprocess.run(f"{sys.executable} -m aiaudit scan --ruleset dl-training --root "
                          f"{root} --format json | head -c 100", shell=True,
                          capture_output=True, text=True, env=env, cwd="/", timeout=120)
    # the reader left after 100 bytes: the rest of the report is lost, and that is said
    # once (exit 2), never silently
    assert head.stdout.startswith("{") and "Traceback" not in head.stderr
    assert head.stderr == "aiaudit: error: cannot write to stdout: Broken pipe; the json " \
                          "report for stdout was not written\n"


@pytest.mark.parametrize("name,needle", [
    ("alias-bomb.yaml", "alias-bomb.yaml:9:4: invalid YAML: aliases expand this to more than"),
    ("alias-recursive.yaml", "alias-recursive.yaml:7:11: invalid YAML: recursive alias"),
    ("deep.yaml", "invalid YAML: nested deeper than 100 levels"),
])
def test_hostile_yaml_is_refused_quickly(name: str, needle: str) -> None:
    """Aliases that expand exponentially or loop, and deep nesting: one message with the
    place, at once (the alias bomb took 5 s per level before, the others crashed)."""
    from tests.helpers import CpuTime

    with CpuTime() as t:
        res = cli("validate", str(RS / name))
    assert t.seconds < 2
    _usage_error(res, needle)


@pytest.mark.parametrize("depth,needle", [(150, "nested deeper than 100 levels"),
                                          (100_000, "nested too deeply")])
def test_deeply_nested_json_report_is_a_usage_error(tmp_path, depth: int, needle: str) -> None:
    report = tmp_path / "deep.json"
    report.write_text("[" * depth + "]" * depth)
    _usage_error(cli("render", str(report)), needle)
    _usage_error(cli("scan", "--root", str(tmp_path), "--changes-since", str(report)), needle)


def test_every_exit_code_is_documented() -> None:
    """Every ``ExitCode`` is in the README's table and in ``--help`` (5 is the fleet's)."""
    from aiaudit.cli.fleet import FLEET_EXIT_HELP
    from aiaudit.cli.options import EXIT_CODES_HELP
    from aiaudit.core.errors import ExitCode

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for code in ExitCode:
        assert f"\n| {int(code)} |" in readme, code
        text = FLEET_EXIT_HELP if code is ExitCode.BAD_INPUT else EXIT_CODES_HELP
        assert f"\n  {int(code)}  " in text, code
