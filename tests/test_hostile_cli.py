"""Hostile input on the CLI side: rulesets, waivers, saved reports, option values, a ruleset
named like a shipped one in the working directory, and outputs that cannot be written
(full disk, closed stdout, closed pipe, a failing reporter plugin, a reporter that
overruns the deadline).  Each case: a documented exit code, one message line with the
place, never a traceback, and no output lost or half-written.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from aiaudit.api import ReporterSpec
from aiaudit.cli import scan as cli_scan
from aiaudit.core import plugins
from tests.helpers import FIXTURES, CpuTime, cli
from tests.modes_support import scripted  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
AIAUDIT = [sys.executable, "-m", "aiaudit"]
SMALL = str(FIXTURES / "rulesets" / "small.yaml")
HEAD = 'ruleset: x\nversion: "1"\nextends: dl-training\nrules: []\n'
"""A valid ruleset prefix; each hostile case appends one line (line 5)."""


def _one_error(res, needle: str, code: int = 2) -> str:
    """``res`` exited ``code`` with exactly one ``aiaudit: error:`` line containing
    ``needle`` and no traceback; returns the line."""
    err = res.err if hasattr(res, "err") else res.stderr
    got = res.code if hasattr(res, "code") else res.returncode
    assert got == code, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("aiaudit")]
    assert len(lines) == 1, err
    assert needle in lines[0], err
    return lines[0]


# ------------------------------------------------------------------ hostile YAML documents
HOSTILE_YAML = [
    ("tag-int", "foo: !!int x\n", ":5:6: invalid YAML: cannot read tag:yaml.org,2002:int"),
    ("tag-float", "foo: !!float x\n", ":5:6: invalid YAML: cannot read"),
    ("tag-int-empty", "foo: !!int\n", ":5:6: invalid YAML: cannot read"),
    ("tag-bool", "foo: !!bool x\n", ":5:6: invalid YAML: cannot read"),
    ("tag-timestamp", "foo: !!timestamp 2026-02-30\n", ":5:6: invalid YAML: cannot read"),
    ("tag-binary", "foo: !!binary a\n", ":5:6: invalid YAML: failed to decode base64"),
    ("tag-custom", "foo: !foo x\n", ":5:6: invalid YAML: could not determine a constructor"),
    ("tag-python", "foo: !!python/object:os.system x\n", ":5:6: invalid YAML"),
    ("huge-int", "foo: " + "9" * 5000 + "\n", ":5:6: invalid YAML: integer of 5000 characters"),
    ("huge-negative-int", "foo: -" + "9" * 5000 + "\n", ":5:6: invalid YAML: integer of"),
    ("sexagesimal", "foo: " + ":".join(["1"] * 100_000) + "\n", ":5:6: invalid YAML: integer"),
    ("nul", "foo: a\0b\n", ":5:7: invalid YAML: character #x0000 is not allowed"),
    ("nul-after-utf8", "foo: é\0\n", ":5:7: invalid YAML: character #x0000"),
    ("bell", "foo: \x07\n", ":5:6: invalid YAML: character #x0007"),
    ("deep-flow", "foo: " + "[" * 2000 + "]" * 2000 + "\n", ":5:"),
    ("deep-block", "foo:\n" + "".join(" " * i + "- \n" for i in range(1, 2000)), ":"),
    ("deep-mapping", "foo: " + "{a: " * 2000 + "1" + "}" * 2000 + "\n", ":5:"),
]


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("name,line,needle", HOSTILE_YAML, ids=[c[0] for c in HOSTILE_YAML])
def test_hostile_ruleset_is_a_positioned_usage_error(tmp_path: Path, name: str, line: str,
                                                     needle: str) -> None:
    rs = _write(tmp_path / "r.yaml", HEAD + line)
    with CpuTime() as t:
        msg = _one_error(cli("validate", str(rs)), f"{rs}{needle}")
    assert t.seconds < 5, f"refused at once, not after {t.seconds:.1f} s of CPU"
    _one_error(cli("scan", "--root", str(tmp_path), "--ruleset", str(rs)), msg.split(": ", 2)[2])


@pytest.mark.parametrize("name,line,needle", HOSTILE_YAML, ids=[c[0] for c in HOSTILE_YAML])
def test_hostile_waiver_file_is_a_positioned_usage_error(tmp_path: Path, name: str, line: str,
                                                         needle: str) -> None:
    w = _write(tmp_path / "w.yaml", "waivers: []\n\n\n\n" + line)
    if name == "tag-timestamp":  # waiver dates are read as text: only 'foo' is wrong here
        needle = ":1:1: (top): unknown key(s) ('foo' was unexpected)"
    _one_error(cli("scan", "--root", str(tmp_path), "--waivers", str(w)), f"{w}{needle}")


def test_nul_in_extends_is_a_positioned_usage_error(tmp_path: Path) -> None:
    rs = _write(tmp_path / "r.yaml", 'ruleset: x\nversion: "1"\nextends: "./a\\0b.yaml"\n')
    _one_error(cli("validate", str(rs)), f"{rs}:3:10: extends: a NUL byte at character 4")


MERGE = """\
ruleset: merged
version: "1"
rules:
  - &base
    id: M-ONE
    check: kernel.sysctl
    severity: low
    title: one
    params: {key: vm.swappiness, op: eq, value: "1"}
  - <<: *base
    id: M-TWO
    title: two
    severity: high
"""


def test_yaml_merge_keys_are_accepted(tmp_path: Path) -> None:
    rs = _write(tmp_path / "m.yaml", MERGE)
    res = cli("validate", str(rs))
    assert res.code == 0, res.err
    listing = cli("rules", "--ruleset", str(rs))
    assert listing.code == 0
    rows = {line.split()[0]: line.split() for line in listing.out.splitlines()[2:]}
    assert rows["M-TWO"][1] == "high" and rows["M-TWO"][-1] == "two"
    assert rows["M-ONE"][1] == "low" and rows["M-ONE"][-1] == "one"


def test_duplicate_key_next_to_a_merge_key_is_still_found(tmp_path: Path) -> None:
    rs = _write(tmp_path / "m.yaml", MERGE + "    title: again\n")
    res = cli("validate", str(rs))
    assert res.code == 2 and f"{rs}:14:5: duplicate key 'title'" in res.err, res.err
    assert res.err.count("\n") == 1, "the merged-in keys are not duplicates"


def test_merge_keys_are_bounded_by_the_alias_guard(tmp_path: Path) -> None:
    lines = ["ruleset: x", 'version: "1"', "a0: &a0 {k: v}"]
    for i in range(1, 12):
        lines.append(f"a{i}: &a{i} {{" + ", ".join(f"<<: *a{i - 1}" if j == 0 else
                                                   f"k{j}: *a{i - 1}" for j in range(10))
                     + "}")
    rs = _write(tmp_path / "bomb.yaml", "\n".join(lines) + "\n")
    with CpuTime() as t:
        _one_error(cli("validate", str(rs)), "invalid YAML: aliases expand this to more than")
    assert t.seconds < 5, f"{t.seconds:.1f} s of CPU"


# ------------------------------------------------------------------ hostile saved reports
def _report(tmp_path: Path) -> dict:
    res = cli("scan", "--ruleset", SMALL, "--root", str(tmp_path), "--format", "json")
    assert res.code in (0, 1, 3), res.err
    return json.loads(res.out)


HOSTILE_JSON = [
    ("huge-int", "9" * 5000, "integer of 5000 digits"),
    ("huge-negative-int", "-" + "9" * 5000, "integer of 5000 digits"),
    ("nan", "NaN", "NaN is not a JSON number"),
    ("infinity", "-Infinity", "-Infinity is not a JSON number"),
    ("overflow", "1e999", "number 1e999 is out of range"),
    ("long-overflow", "1" * 400 + ".5", "out of range"),
    ("nul", "\0", "Expecting value"),
]
"""(name, the value of a key inserted before "duration_s", message)."""


@pytest.mark.parametrize("name,value,needle", HOSTILE_JSON, ids=[c[0] for c in HOSTILE_JSON])
def test_hostile_saved_report_is_a_positioned_usage_error(tmp_path: Path, name: str,
                                                          value: str, needle: str) -> None:
    text = json.dumps(_report(tmp_path), indent=1)
    bad = tmp_path / "bad.json"
    bad.write_text(text.replace('"duration_s": ', f'"x": {value}, "duration_s": ', 1))
    line, ln = next((i, ln) for i, ln in enumerate(text.splitlines(), 1) if '"duration_s"' in ln)
    col = ln.index('"duration_s"') + len('"x": ') + 1  # where the inserted value starts
    place = f"{bad}:{line}:{col}:"
    for args in (("render", str(bad)),
                 ("render", str(bad), "--format", "sarif"),
                 ("remediate", str(bad), "--output-dir", str(tmp_path / "fix")),
                 ("scan", "--root", str(tmp_path), "--ruleset", SMALL,
                  "--changes-since", str(bad))):
        msg = _one_error(cli(*args), needle)
        assert msg.startswith(f"aiaudit: error: {place}"), msg
    assert not (tmp_path / "fix").exists()


# ------------------------------------------------------------------ option values
@pytest.mark.parametrize("option", ["--timeout", "--rule-timeout"])
@pytest.mark.parametrize("value,needle", [
    ("inf", "must be at most 86400"), ("-inf", "must be > 0"), ("nan", "must be > 0"),
    ("1e19", "must be at most 86400"), ("1e12", "must be at most 86400"),
    ("86401", "must be at most 86400"),
    ("-1", "must be > 0"), ("0", "must be > 0"), ("ten", "not a number"),
])
def test_timeouts_out_of_range_are_usage_errors(tmp_path: Path, option: str, value: str,
                                                needle: str) -> None:
    res = cli("scan", "--root", str(tmp_path), "--ruleset", SMALL, f"{option}={value}")
    assert res.code == 2 and "Traceback" not in res.err
    assert f"argument {option}: {needle}" in res.err, res.err


def test_largest_timeout_is_accepted(tmp_path: Path) -> None:
    res = cli("scan", "--root", str(tmp_path), "--ruleset", SMALL, "--timeout", "86400",
              "--rule-timeout", "86400")
    assert res.code in (0, 1, 3), res.err


@pytest.mark.parametrize("args", [
    ("scan", "--root", "/tmp/a\0b"),
    ("scan", "--ruleset", "./r\0.yaml"),
    ("scan", "--output", "json:/tmp/o\0ut"),
    ("scan", "--waivers", "w\0.yaml"),
    ("scan", "--state", "s\0.json"),
    ("render", "r\0.json"),
    ("validate", "x\0.yaml"),
])
def test_nul_in_an_argument_is_a_usage_error(args: tuple[str, ...]) -> None:
    bad = next(i for i, a in enumerate(args) if "\0" in a)
    _one_error(cli(*args), f"argument {bad + 1} ")
    assert f"a NUL byte at character {args[bad].index(chr(0)) + 1}" in cli(*args).err


# ------------------------------------------------------------------ cwd hijack
HIJACK = 'ruleset: hijack\nversion: "666"\nrules: []\n'


@pytest.mark.parametrize("planted", ["dl-training", "dl-training.yaml", "dl-training.yml"])
def test_a_file_in_the_cwd_does_not_replace_a_shipped_ruleset(tmp_path: Path, monkeypatch,
                                                              planted: str) -> None:
    (tmp_path / planted).write_text(HIJACK)
    monkeypatch.chdir(tmp_path)
    res = cli("scan", "--root", str(tmp_path), "--ruleset", "dl-training", "--format", "json")
    doc = json.loads(res.out)
    assert doc["ruleset"]["name"] == "dl-training", res.err
    assert doc["ruleset"]["source"] == "aiaudit.rulesets/dl-training.yaml"
    listing = cli("rules", "--ruleset", "dl-training")
    assert "hijack" not in listing.out and listing.out.startswith("# dl-training")


def test_a_ruleset_file_needs_a_path_and_the_report_names_it(tmp_path: Path,
                                                             monkeypatch) -> None:
    (tmp_path / "dl-training.yaml").write_text(HIJACK)
    (tmp_path / "mine").write_text(HIJACK)
    monkeypatch.chdir(tmp_path)
    res = cli("scan", "--root", str(tmp_path), "--ruleset", "./dl-training.yaml",
              "--format", "json")
    assert json.loads(res.out)["ruleset"] == {
        "name": "hijack", "version": "666", "source": str(tmp_path / "dl-training.yaml")}
    text = cli("scan", "--root", str(tmp_path), "--ruleset", "dl-training.yaml")
    assert f"ruleset from {tmp_path / 'dl-training.yaml'}" in text.out.splitlines()[1]
    shipped = cli("scan", "--root", str(tmp_path), "--ruleset", "dl-training")
    assert "ruleset from" not in shipped.out
    _one_error(cli("scan", "--root", str(tmp_path), "--ruleset", "mine"),
               "unknown ruleset 'mine' (shipped: ")
    assert "for the file, say ./mine" in cli("rules", "--ruleset", "mine").err
    assert cli("rules", "--ruleset", "./mine").out.startswith("# hijack 666")


def test_extends_by_name_means_the_shipped_ruleset(tmp_path: Path) -> None:
    (tmp_path / "dl-training").write_text(HIJACK)
    child = tmp_path / "child.yaml"
    child.write_text('ruleset: child\nversion: "1"\nextends: dl-training\nrules: []\n')
    res = cli("rules", "--ruleset", str(child))
    assert res.code == 0 and res.out.count("\n") > 10, res.err  # the shipped rules


# ------------------------------------------------------------------ outputs
def _scan_cmd(root: Path, *extra: str) -> list[str]:
    return [*AIAUDIT, "scan", "--ruleset", SMALL, "--root", str(root), *extra]


def test_stdout_on_a_full_disk(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(_scan_cmd(tmp_path, "--format", "json"), stdout=full,
                              stderr=subprocess.PIPE, text=True, env=ENV, timeout=120)
    _one_error(proc, "cannot write to stdout: No space left on device; the json report for "
                     "stdout was not written")


@pytest.mark.parametrize("command", [
    ("scan", "--ruleset", SMALL, "--root", "/nonexistent-root-is-checked-later"),
    ("rules", "--ruleset", SMALL), ("explain", "SMALL-SWAPPINESS", "--ruleset", SMALL),
    ("validate", SMALL)])
@pytest.mark.parametrize("how", ["full", "closed"])
def test_every_command_reports_a_lost_stdout(tmp_path: Path, command: tuple[str, ...],
                                             how: str) -> None:
    argv = list(command)
    if argv[0] == "scan":
        argv[-1] = str(tmp_path)
    kwargs: dict = {"preexec_fn": lambda: os.close(1)} if how == "closed" else {}
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*AIAUDIT, *argv], stdout=full if how == "full" else None,
                              stderr=subprocess.PIPE, text=True, env=ENV, timeout=120,
                              **kwargs)
    needle = "No space left on device" if how == "full" else "it is closed"
    _one_error(proc, f"cannot write to stdout: {needle}")


def test_closed_stdout_leaves_the_output_files_complete(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = subprocess.run(_scan_cmd(tmp_path, "-o", f"json:{out}"), stdout=None,
                          stderr=subprocess.PIPE, text=True, env=ENV, timeout=120,
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode in (0, 1), proc.stderr  # nothing was meant for stdout
    assert proc.stderr == ""
    assert json.loads(out.read_text())["ruleset"]["name"] == "small"


@pytest.mark.parametrize("read", [0, 100])
def test_closed_pipe_is_an_error(tmp_path: Path, read: int) -> None:
    """The reader leaves before the report is written, or after 100 bytes of a report
    larger than the pipe buffer (a buffered ``sys.stdout`` lost the rest silently)."""
    cmd = [*AIAUDIT, "scan", "--ruleset", "dl-training", "--root", str(tmp_path), "--format",
           "json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    if read:
        assert proc.stdout.read(read).startswith(b"{")
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    err = err.decode()
    proc.stdout = None
    res = subprocess.CompletedProcess(proc.args, proc.returncode, None, err)
    _one_error(res, "cannot write to stdout: Broken pipe")


def test_output_file_on_a_full_disk_keeps_the_other_outputs(tmp_path: Path) -> None:
    good = tmp_path / "r.txt"
    res = cli("scan", "--ruleset", SMALL, "--root", str(tmp_path), "-o", "json:/dev/full",
              "-o", f"text:{good}")
    _one_error(res, "cannot write /dev/full: No space left on device; the json report for "
                    "/dev/full was not written")
    assert "Summary:" in good.read_text()


def test_output_to_a_device_or_link_is_written_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target.name)
    res = cli("scan", "--ruleset", SMALL, "--root", str(tmp_path), "-o", f"json:{link}",
              "-o", "json:/dev/null")
    assert res.code in (0, 1), res.err
    assert link.is_symlink() and json.loads(target.read_text())["ruleset"]["name"] == "small"
    assert (target.stat().st_mode & 0o777) == 0o640, "mode of the replaced file kept"
    assert Path("/dev/null").is_char_device()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_concurrent_readers_never_see_an_empty_or_partial_report(tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(_report(tmp_path)))
    out = tmp_path / "out.json"
    assert cli("render", str(saved), "-o", f"json:{out}").code == 0
    bad: list[str] = []
    reads = 0
    stop = threading.Event()

    def reader() -> None:
        nonlocal reads
        while not stop.is_set():
            text = out.read_text()
            reads += 1
            try:
                json.loads(text)
            except ValueError:
                bad.append(text[:80])

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(40):
            assert cli("render", str(saved), "-o", f"json:{out}").code == 0
    finally:
        stop.set()
        t.join()
    assert reads > 40 and bad == [], f"{len(bad)} of {reads} reads incomplete"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_state_failure_keeps_the_verdict(scripted, tmp_path: Path, monkeypatch) -> None:  # noqa: F811
    state = tmp_path / "state.json"
    real_fsync = os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    failing = scripted({"R1": ("high", [{"status": "fail"}])})
    passing = scripted({"R1": ("high", [{"status": "pass"}])})
    monkeypatch.setattr(os, "fsync", full)
    res = cli("scan", "--ruleset", str(failing), "--root", str(tmp_path), "--state", str(state))
    assert res.code == 1, res.err
    _one_error(res, f"--state: this scan was not saved (cannot write {state}: No space left on "
                    "device)", code=1)
    assert not state.exists() and list(tmp_path.glob(".state*")) == []
    res = cli("scan", "--ruleset", str(passing), "--root", str(tmp_path), "--state", str(state))
    assert res.code == 2 and "--state: this scan was not saved" in res.err
    monkeypatch.setattr(os, "fsync", real_fsync)
    res = cli("scan", "--ruleset", str(failing), "--root", str(tmp_path), "--state", str(state))
    assert res.code == 1 and res.err == "" and json.loads(state.read_text())["results"]


def _with_reporters(monkeypatch, *specs: ReporterSpec) -> None:
    reg = plugins.registry()
    reporters = dict(reg.reporters.items())
    reporters.update({s.name: s for s in specs})
    monkeypatch.setattr(plugins, "_REGISTRY", replace(reg, reporters=reporters))


def _raises(exc: BaseException):
    def render(run, options):
        raise exc
    return render


@pytest.mark.parametrize("render,needle", [
    (_raises(ValueError("bad value")), "failed: ValueError: bad value"),
    (_raises(SystemExit(3)), "failed: SystemExit: 3"),
    (_raises(GeneratorExit()), "failed: GeneratorExit"),
    (_raises(RecursionError("deep")), "failed: RecursionError: deep"),
    (lambda run, options: b"bytes", "returned bytes, not text"),
    (lambda run, options: None, "returned NoneType, not text"),
])
def test_a_failing_reporter_costs_only_its_output(tmp_path: Path, monkeypatch, render,
                                                  needle: str) -> None:
    _with_reporters(monkeypatch, ReporterSpec(name="boom", render=render))
    good, lost = tmp_path / "r.json", tmp_path / "lost.txt"
    res = cli("scan", "--ruleset", SMALL, "--root", str(tmp_path), "-o", f"boom:{lost}",
              "-o", f"json:{good}")
    msg = _one_error(res, f"reporter 'boom' (module {__name__}) {needle}")
    assert msg.endswith(f"the boom report for {lost} was not written")
    assert not lost.exists() and json.loads(good.read_text())["ruleset"]["name"] == "small"
    saved = cli("render", str(good), "--format", "boom")
    _one_error(saved, "reporter 'boom'")


def _busy(run, options):
    while True:
        pass


def test_a_reporter_that_overruns_the_deadline_is_stopped(tmp_path: Path, monkeypatch) -> None:
    _with_reporters(monkeypatch, ReporterSpec(name="busy", render=_busy))
    monkeypatch.setattr(cli_scan, "REPORT_MIN_S", 0.3)
    first = tmp_path / "first.json"
    t0 = time.monotonic()
    res = cli("scan", "--ruleset", SMALL, "--root", str(tmp_path), "--timeout", "0.2",
              "-o", f"json:{first}", "-o", f"busy:{tmp_path / 'b'}",
              "-o", f"text:{tmp_path / 't'}")
    # a deadline test, so wall time: the --timeout deadline (not the work) must stop a
    # reporter that never ends; generous for a loaded machine, far below that endless loop
    assert time.monotonic() - t0 < 30
    assert res.code == 2, res.err
    assert f"not written by the deadline: busy:{tmp_path / 'b'}, text:{tmp_path / 't'}" \
        in res.err
    assert "the reports were not finished by the deadline (--timeout 0.2 s" in res.err
    assert "Traceback" not in res.err
    assert json.loads(first.read_text())["ruleset"]["name"] == "small"
    assert not (tmp_path / "b").exists() and not (tmp_path / "t").exists()


WATCHDOG = """
import signal, sys
from dataclasses import replace
from aiaudit import cli
from aiaudit.core import plugins
from aiaudit.api import ReporterSpec

def stuck(run, options):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)  # the alarm cannot reach it
    while True:
        pass

reg = plugins.registry()
plugins._REGISTRY = replace(reg, reporters={**reg.reporters,
                                            "stuck": ReporterSpec(name="stuck", render=stuck)})
import aiaudit.cli.output, aiaudit.cli.scan
aiaudit.cli.scan.REPORT_MIN_S = 0.3
aiaudit.cli.output.REPORT_HARD_GRACE_S = 0.5
sys.exit(cli.main(sys.argv[1:]))
"""


def test_the_watchdog_ends_a_reporter_the_alarm_cannot_reach(tmp_path: Path) -> None:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", WATCHDOG, "scan", "--ruleset", SMALL,
                           "--root", str(tmp_path), "--timeout", "0.2", "--format", "stuck"],
                          capture_output=True, text=True, env=ENV, timeout=60)
    # a deadline test, so wall time: the watchdog must end a reporter stuck past the
    # deadline; generous for a loaded machine, below the 60 s at which the test kills it
    assert time.monotonic() - t0 < 30
    _one_error(proc, "the reports were not finished 0.3 s after the rules; stopped")
    assert proc.stdout == ""


@pytest.mark.parametrize("stdin,needle", [
    ("closed", "-: cannot read the report from stdin: it is closed"),
    (b"\xff\xfe{}", "-: not UTF-8 text (byte 0)"),
    (b'{"n": ' + b"9" * 5000 + b"}", "-:1:7: not a JSON report: integer of 5000 digits"),
])
def test_render_from_a_hostile_stdin(stdin, needle: str) -> None:
    kwargs: dict = ({"preexec_fn": lambda: os.close(0), "stdin": None} if stdin == "closed"
                    else {"input": stdin})
    proc = subprocess.run([*AIAUDIT, "render", "-"], capture_output=True, env=ENV, timeout=120,
                          **kwargs)
    res = subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout,
                                      proc.stderr.decode())
    _one_error(res, needle)
    assert proc.stdout == b""


def test_output_into_a_missing_directory(tmp_path: Path) -> None:
    res = cli("scan", "--ruleset", SMALL, "--root", str(tmp_path), "-o",
              f"json:{tmp_path}/no/such/r.json")
    _one_error(res, f"cannot write {tmp_path}/no/such/r.json: No such file or directory")


# ------------------------------------------------------------------ issue 25: every command
def _saved_report(tmp_path: Path) -> Path:
    report = tmp_path / "saved.json"
    res = cli("scan", "--ruleset", SMALL, "--root", str(tmp_path), "-o", f"json:{report}")
    assert res.code in (0, 1), res.err
    return report


def _sshd_root(tmp_path: Path) -> Path:
    root = tmp_path / "sshroot"
    (root / "etc/ssh").mkdir(parents=True)
    (root / "etc/ssh/sshd_config").write_text("PermitRootLogin no\n")
    return root


def _other_commands(tmp_path: Path) -> dict[str, list[str]]:
    report, sroot = _saved_report(tmp_path), _sshd_root(tmp_path)
    return {"sshd": ["sshd", "--root", str(sroot)],
            "sshd-json": ["sshd", "--root", str(sroot), "--format", "json"],
            "render": ["render", str(report)],
            "render-json": ["render", str(report), "--format", "json"],
            "remediate": ["remediate", str(report), "-d", str(tmp_path / "bundle")],
            "help": ["--help"], "scan-help": ["scan", "--help"], "version": ["--version"]}


@pytest.mark.parametrize("how", ["full", "closed"])
@pytest.mark.parametrize("command", ["sshd", "sshd-json", "render", "render-json", "remediate",
                                     "help", "scan-help", "version"])
def test_every_other_command_reports_a_lost_stdout(tmp_path: Path, command: str,
                                                   how: str) -> None:
    """`aiaudit sshd > /dev/full` was an internal error (exit 4), `--help > /dev/full` a
    silent exit 0: each is one message and exit code 2, as for the scan's reports."""
    argv = _other_commands(tmp_path)[command]
    kwargs: dict = {"preexec_fn": lambda: os.close(1)} if how == "closed" else {}
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*AIAUDIT, *argv], stdout=full if how == "full" else None,
                              stderr=subprocess.PIPE, text=True, env=ENV, timeout=120,
                              **kwargs)
    needle = "No space left on device" if how == "full" else "it is closed"
    _one_error(proc, f"cannot write to stdout: {needle}")
    if command == "remediate":  # the bundle is complete; only the summary line was lost
        assert (tmp_path / "bundle" / "install.sh").is_file()


def test_sshd_into_a_closed_pipe(tmp_path: Path) -> None:
    cfg = "".join(f"# comment {i}\n" for i in range(5000)) + "PermitRootLogin no\n"
    root = _sshd_root(tmp_path)
    (root / "etc/ssh/sshd_config").write_text(cfg)
    proc = subprocess.Popen([*AIAUDIT, "sshd", "--root", str(root), "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    proc.stdout = None
    _one_error(subprocess.CompletedProcess(proc.args, proc.returncode, None, err.decode()),
               "cannot write to stdout: Broken pipe")


HOSTILE_TEXT = "x\x1b]0;owned\x07\x1b[2J\r\u202eevil\x9b31m\u2028"
"""A file name (or argument) that retitles the terminal, clears it, returns the cursor,
reverses what follows and opens an 8-bit CSI, if printed raw."""
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x9b", "\u2028")


def _escaped(err: str) -> None:
    """``err`` holds no raw control character, and the name is shown escaped."""
    assert not [c for c in RAW if c in err], repr(err)
    assert "x\\x1b]0;owned\\x07\\x1b[2J\\x0d\\u202eevil\\x9b31m\\u2028" in err, err


def test_host_text_on_stderr_is_escaped(tmp_path: Path) -> None:
    """File names reached stderr raw: every message escapes them, as the text report
    does (aiaudit.core.escape.human_safe)."""
    evil = tmp_path / HOSTILE_TEXT
    evil_yaml = tmp_path / f"{HOSTILE_TEXT}.yaml"
    report = _saved_report(tmp_path)
    not_a_dir = tmp_path / f"{HOSTILE_TEXT}.file"
    not_a_dir.write_text("x")
    for argv in (["validate", str(evil_yaml)],
                 ["rules", "--ruleset", str(evil_yaml)],
                 ["scan", "--root", str(evil)],
                 ["scan", "--ruleset", SMALL, "--root", str(tmp_path), "-o", f"json:{evil}/r"],
                 ["render", str(evil)],
                 ["remediate", str(report), "-d", str(not_a_dir)],
                 ["sshd", "--root", str(evil)],
                 ["rules", HOSTILE_TEXT]):
        res = cli(*argv)
        assert res.code == 2, (argv, res.err)
        _escaped(res.err)
        assert res.err.count("\n") <= 2, res.err  # one message (and argparse's usage line)


def test_a_hostile_ruleset_text_is_escaped(tmp_path: Path) -> None:
    """Text from inside a file (a YAML value quoted by a message) is escaped as well."""
    rs = _write(tmp_path / "r.yaml", HEAD.replace("extends: dl-training",
                                                  'extends: "./x\\e]0;owned\\a.yaml"'))
    res = cli("validate", str(rs))
    assert res.code == 2 and "\x1b" not in res.err and "\x07" not in res.err, res.err
    assert "\\x1b]0;owned\\x07" in res.err


def test_a_closed_stderr_keeps_messages_out_of_stdout(tmp_path: Path) -> None:
    """With stderr closed (2>&-), print(file=sys.stderr) wrote the message to stdout,
    into whatever reads the report."""
    for argv in (["scan", "--root", str(tmp_path / "none")], ["validate", "/nonexistent.yaml"],
                 ["scan", "--bogus"]):
        proc = subprocess.run([*AIAUDIT, *argv], capture_output=True, text=True, env=ENV,
                              timeout=120, preexec_fn=lambda: os.close(2))
        assert proc.returncode == 2 and proc.stdout == "", (argv, proc.stdout)


# ------------------------------------------------------------------ issue 25: --format kept
def test_an_explicit_format_is_never_dropped_in_silence(tmp_path: Path) -> None:
    """`scan -o html:x.html --format json` left stdout empty without a word: the
    --format report goes to stdout as well when no --output is in that format."""
    html, js = tmp_path / "x.html", tmp_path / "x.json"
    base = ["scan", "--ruleset", SMALL, "--root", str(tmp_path)]
    res = cli(*base, "-o", f"html:{html}", "--format", "json")
    assert res.code in (0, 1), res.err
    assert json.loads(res.out)["ruleset"]["name"] == "small" and "<html" in html.read_text()
    # without --format, -o FORMAT:FILE replaces stdout as before; a plain -o FILE takes the
    # --format report; a --format that an output uses is not repeated on stdout
    for extra in (["-o", f"html:{html}"], ["--format", "json", "-o", str(js)],
                  ["--format", "json", "-o", f"json:{js}", "-o", f"html:{html}"]):
        res = cli(*base, *extra)
        assert res.code in (0, 1) and res.out == "", (extra, res.out[:80])
    assert json.loads(js.read_text())["ruleset"]["name"] == "small"
    saved = _saved_report(tmp_path)
    res = cli("render", str(saved), "--format", "text", "-o", f"sarif:{tmp_path / 's'}")
    assert res.code == 0 and "Summary:" in res.out, res.err


def test_render_stops_a_reporter_that_never_returns(tmp_path: Path, monkeypatch) -> None:
    """`render` is bounded like `scan`: its --timeout deadline ends a reporter plugin that
    never returns (one message, exit code 2) instead of waiting for ever."""
    from aiaudit.cli import reports

    saved = _saved_report(tmp_path)
    _with_reporters(monkeypatch, ReporterSpec(name="busy", render=_busy))
    monkeypatch.setattr(reports, "REPORT_MIN_S", 0.3)
    t0 = time.monotonic()
    res = cli("render", str(saved), "--timeout", "0.2", "-o", f"json:{tmp_path / 'a'}",
              "-o", f"busy:{tmp_path / 'b'}")
    # a deadline test, so wall time: only the deadline can end an endless reporter;
    # generous for a loaded machine
    assert time.monotonic() - t0 < 30
    assert res.code == 2, res.err
    assert "the reports were not finished by the deadline (--timeout 0.2 s" in res.err
    assert f"not written by the deadline: busy:{tmp_path / 'b'}" in res.err
    assert json.loads((tmp_path / "a").read_text())["ruleset"]["name"] == "small"
