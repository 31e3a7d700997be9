"""Slurm prolog behaviour: exit codes by threshold and ``--on-error``, the deadline, the
one-line reason, ``SLURM_JOB_USER``, and the example prolog script (run for real, traced to
prove it starts no Slurm command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiaudit.cli import build_parser
from aiaudit.cli.options import PROLOG_TIMEOUT
from aiaudit.cli.scan import mode_inputs, reason_line
from tests.helpers import cli
from tests.modes_support import (  # noqa: F401
    AIAUDIT,
    REPO,
    finding,
    need_program,
    run_of,
    scripted,
)

PROLOG = REPO / "examples" / "slurm" / "prolog.sh"


# ----------------------------------------------------------------- reason line
def test_reason_line_names_worst_failure_and_count() -> None:
    from dataclasses import replace

    from aiaudit.core.model import Severity

    low = finding("LOW-RULE", "fail", severity="low")
    crit = finding("MEMLOCK-SOFT", "fail", "alice", severity="critical")
    crit = replace(crit, result=replace(crit.result, expected="unlimited", actual="64 KiB"))
    high = finding("GPU-COUNT", "fail", severity="high")
    run = run_of([low, high, crit])
    assert reason_line(run, Severity.HIGH, 1) == (
        "aiaudit: FAIL MEMLOCK-SOFT (alice: 64 KiB, expected unlimited); 1 more")
    assert reason_line(run, Severity.CRITICAL, 1) == (
        "aiaudit: FAIL MEMLOCK-SOFT (alice: 64 KiB, expected unlimited)")
    err = run_of([finding("SHM", "error", "/dev/shm"), low])
    assert reason_line(err, Severity.HIGH, 3) == "aiaudit: ERROR SHM (/dev/shm: error)"
    assert reason_line(err, Severity.HIGH, 0) == (
        "aiaudit: WARN not evaluated SHM (/dev/shm: error)")
    assert reason_line(run_of([low]), Severity.HIGH, 0) is None


def test_reason_line_is_one_bounded_line() -> None:
    from dataclasses import replace

    from aiaudit.core.model import Severity

    f = finding("R", "fail")
    f = replace(f, result=replace(f.result, message="x\ny " * 400))
    line = reason_line(run_of([f]), Severity.INFO, 1)
    assert line is not None and "\n" not in line and len(line) <= 250
    assert line.endswith("...)")


# ----------------------------------------------------------------- exit codes
def _scan(rs: Path, root: Path, *extra: str, env: dict[str, str] | None = None):
    return cli("scan", "--ruleset", str(rs), "--root", str(root), "--fail-on", "high",
               "--format", "json", *extra, env=env)


def test_exit_only_for_failures_at_or_above_threshold(scripted, tmp_path: Path) -> None:  # noqa: F811
    low = scripted({"LOW": ("medium", [{"status": "fail"}]), "OK": ("high", [{"status": "pass"}])})
    r = _scan(low, tmp_path, "--prolog")
    assert (r.code, r.err) == (0, "")
    high = scripted({"HIGH": ("high", [{"status": "fail", "subject": "alice",
                                        "expected": "unlimited", "actual": "64 KiB"}]),
                     "HIGH2": ("critical", [{"status": "fail"}])})
    r = _scan(high, tmp_path, "--prolog")
    assert r.code == 1
    assert r.err == "aiaudit: FAIL HIGH2 (scripted fail for user None from None); 1 more\n"


@pytest.mark.parametrize("extra,code,err", [
    ((), 3, ""),                                   # default: "could not look" is 3
    (("--reason",), 3, "aiaudit: ERROR E (gpu0: boom)\n"),
    (("--on-error", "fail", "--reason"), 1, "aiaudit: ERROR E (gpu0: boom)\n"),
    (("--on-error", "pass"), 0, ""),
    (("--prolog",), 0, "aiaudit: WARN not evaluated E (gpu0: boom)\n"),
    (("--prolog", "--on-error", "code"), 3, "aiaudit: ERROR E (gpu0: boom)\n"),
])
def test_on_error(scripted, tmp_path: Path, extra: tuple[str, ...], code: int,  # noqa: F811
                  err: str) -> None:
    rs = scripted({"E": ("high", [{"status": "error", "subject": "gpu0", "message": "boom"}]),
                   "LOW": ("low", [{"status": "error"}])})
    r = _scan(rs, tmp_path, *extra)
    assert (r.code, r.err) == (code, err)


def test_prolog_deadline_stops_the_scan(scripted, tmp_path: Path) -> None:  # noqa: F811
    rs = scripted({"FAST": ("high", [{"status": "pass"}]),
                   "HANGS": ("high", [{"status": "pass"}], 30),
                   "AFTER": ("high", [{"status": "fail"}])})
    t0 = time.monotonic()
    r = _scan(rs, tmp_path, "--prolog", "--timeout", "0.5")
    # a deadline test, so wall time: the 0.5 s deadline must stop a check that sleeps 30 s
    # (the 20 s rule timeout would otherwise); generous for a loaded machine
    assert time.monotonic() - t0 < 15
    doc = json.loads(r.out)
    by = {x["rule_id"]: x for x in doc["results"]}
    assert by["FAST"]["status"] == "pass"
    assert by["HANGS"]["status"] == by["AFTER"]["status"] == "error"
    assert "deadline" in by["HANGS"]["message"] and "deadline" in by["AFTER"]["message"]
    assert any("scan deadline of 0.5s reached" in n for n in doc["notices"])
    # AFTER never ran, so its failure is unknown: the node is not drained (on-error pass)
    assert r.code == 0
    assert r.err.startswith("aiaudit: WARN not evaluated AFTER (not evaluated: scan deadline")


def test_prolog_defaults_and_explicit_values_win() -> None:
    p = build_parser()
    m = mode_inputs(p.parse_args(["scan", "--prolog"]))
    assert (m.timeout, m.on_error, m.reason) == (PROLOG_TIMEOUT, "pass", True)
    m = mode_inputs(p.parse_args(["scan", "--prolog", "--timeout", "3", "--on-error",
                                   "fail"]))
    assert (m.timeout, m.on_error) == (3.0, "fail")
    m = mode_inputs(p.parse_args(["scan"]))
    assert (m.timeout, m.on_error, m.reason) == (120.0, "code", False)


def test_training_user_from_slurm_job_user(scripted, tmp_path: Path) -> None:  # noqa: F811
    rs = scripted({"U": ("high", [{"status": "pass"}])})
    r = _scan(rs, tmp_path, "--prolog", env={"SLURM_JOB_USER": "alice", "SUDO_USER": "bob"})
    msg = json.loads(r.out)["results"][0]["message"]
    assert msg == "scripted pass for user alice from $SLURM_JOB_USER"
    r = _scan(rs, tmp_path, "--user", "carol", env={"SLURM_JOB_USER": "alice"})
    assert json.loads(r.out)["results"][0]["message"].endswith("user carol from --user")


# ----------------------------------------------------------------- the example script
def _prolog(tmp_path: Path, *args: str, trace: bool = False, **env: str
            ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    full = {"SLURM_JOB_USER": "alice", "SLURM_JOB_ID": "4242", "AIAUDIT": str(AIAUDIT),
            "AIAUDIT_RULESET": "dl-training", "AIAUDIT_FAIL_ON": "medium",
            "AIAUDIT_REPORT": str(tmp_path / "run" / "last.json"),
            "AIAUDIT_REASON_FILE": str(tmp_path / "run" / "reason"),
            "PATH": "/usr/bin:/bin", **env}
    argv = ["sh", str(PROLOG), *args]
    log = tmp_path / "exec.log"
    if trace:
        argv = ["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(log), *argv]
    proc = subprocess.run(argv, env=full, capture_output=True, text=True, timeout=60)
    execs = []
    if trace:
        for line in log.read_text().splitlines():
            if "execve(" in line and "= 0" in line.rsplit(")", 1)[-1]:
                execs.append(line.split('execve("', 1)[1].split('"', 1)[0])
    return proc, execs


@pytest.fixture
def sysctl_roots(make_root):
    good = make_root({"/etc/sysctl.d/60-train.conf": "vm.swappiness = 10\n"})
    bad = make_root({"/etc/sysctl.d/60-train.conf": "vm.swappiness = 60\n"})
    return good, bad


def test_example_prolog_passes_and_drains(tmp_path: Path, sysctl_roots) -> None:
    if not AIAUDIT.exists():
        pytest.skip("aiaudit is not installed in the venv")
    good, bad = sysctl_roots
    only = ("--only", "SYSCTL-VM-SWAPPINESS")
    proc, _ = _prolog(tmp_path, "--root", str(good), *only)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert not (tmp_path / "run" / "reason").exists()
    assert json.loads((tmp_path / "run" / "last.json").read_text())["host"]["root"] == str(
        good)
    proc, _ = _prolog(tmp_path, "--root", str(bad), *only)
    line = "aiaudit: FAIL SYSCTL-VM-SWAPPINESS (vm.swappiness: 60, expected <= 10)"
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", line + "\n")
    assert (tmp_path / "run" / "reason").read_text() == line + "\n"
    # noise on stderr (a warning from a library) does not become the reason
    noisy = tmp_path / "noisy-aiaudit"
    noisy.write_text(f'#!/bin/sh\necho "DeprecationWarning: x" >&2\nexec {AIAUDIT} "$@"\n')
    noisy.chmod(0o755)
    proc, _ = _prolog(tmp_path, "--root", str(bad), *only, AIAUDIT=str(noisy))
    assert proc.returncode == 1 and proc.stderr == line + "\n"
    # below the threshold: the job runs
    proc, _ = _prolog(tmp_path, "--root", str(bad), *only, AIAUDIT_FAIL_ON="high")
    assert proc.returncode == 0


def test_example_prolog_never_drains_for_its_own_breakage(tmp_path: Path) -> None:
    proc, _ = _prolog(tmp_path, AIAUDIT=str(tmp_path / "nowhere"))
    assert proc.returncode == 0 and "not installed" in proc.stderr
    if not AIAUDIT.exists():
        pytest.skip("aiaudit is not installed in the venv")
    proc, _ = _prolog(tmp_path, "--root", str(tmp_path), AIAUDIT_RULESET="no-such-ruleset")
    assert proc.returncode == 0
    assert "pre-flight check itself failed (exit 2)" in proc.stderr
    assert "unknown ruleset 'no-such-ruleset'" in proc.stderr


def test_example_prolog_runs_no_slurm_command(tmp_path: Path, sysctl_roots) -> None:
    need_program("strace")
    if not AIAUDIT.exists():
        pytest.skip("aiaudit is not installed in the venv")
    _, bad = sysctl_roots
    proc, execs = _prolog(tmp_path, "--root", str(bad), "--only", "SYSCTL-VM-SWAPPINESS",
                          trace=True)
    assert proc.returncode == 1, proc.stderr
    names = {os.path.basename(p) for p in execs}
    assert {"timeout", "aiaudit"} <= names, names
    slurm = {"scontrol", "sinfo", "squeue", "sacct", "sbatch", "srun", "salloc", "scancel",
             "sacctmgr", "sreport", "sstat", "sdiag", "sprio", "sshare", "strigger"}
    assert not names & slurm, names


def _as_slurmd(tmp_path: Path, *args: str, trace: str = "", verbose: bool = False,
               **settings: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the prolog as slurmd does: only SLURM_* variables (plus where this test keeps
    the settings file, /etc/aiaudit/prolog.env on a node), cwd /, stdin /dev/null."""
    conf = tmp_path / "prolog.env"
    base = {"AIAUDIT": str(AIAUDIT), "AIAUDIT_RULESET": "dl-training",
            "AIAUDIT_FAIL_ON": "medium", "AIAUDIT_REPORT": str(tmp_path / "run" / "last.json"),
            "AIAUDIT_REASON_FILE": str(tmp_path / "run" / "reason")}
    conf.write_text("".join(f"{k}='{v}'\n" for k, v in {**base, **settings}.items()))
    env = {"SLURM_JOB_ID": "4242", "SLURM_JOB_USER": "alice", "SLURM_JOB_UID": "1000",
           "SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "AIAUDIT_PROLOG_ENV": str(conf)}
    argv = ["/bin/sh", str(PROLOG), *args]
    log = tmp_path / "trace.log"
    if trace:
        argv = ["strace", "-f", "-qq", *(("-v", "-s", "256") if verbose else ()),
                "-e", f"trace={trace}", "-o", str(log), *argv]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60,
                          cwd="/", stdin=subprocess.DEVNULL)
    return proc, log.read_text() if trace else ""


def _execs(trace: str) -> list[str]:
    return [os.path.basename(line.split('execve("', 1)[1].split('"', 1)[0])
            for line in trace.splitlines()
            if "execve(" in line and "= 0" in line.rsplit(")", 1)[-1]]


def test_example_prolog_reads_settings_file_under_slurmd_env(tmp_path: Path,
                                                            sysctl_roots) -> None:
    if not AIAUDIT.exists():
        pytest.skip("aiaudit is not installed in the venv")
    _, bad = sysctl_roots
    only = ("--only", "SYSCTL-VM-SWAPPINESS")
    proc, _ = _as_slurmd(tmp_path, "--root", str(bad), *only)
    line = "aiaudit: FAIL SYSCTL-VM-SWAPPINESS (vm.swappiness: 60, expected <= 10)"
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", line + "\n")
    assert (tmp_path / "run" / "reason").read_text() == line + "\n"
    report = (tmp_path / "run" / "last.json").read_text()
    assert report.count("\n") == 1 and json.loads(report)["host"]["root"] == str(bad)
    proc, _ = _as_slurmd(tmp_path, "--root", str(bad), *only, AIAUDIT_FAIL_ON="high")
    assert proc.returncode == 0
    assert not (tmp_path / "run" / "reason").exists()  # a fit node clears the old reason


def test_example_prolog_settings_file_is_read_not_run(tmp_path: Path, sysctl_roots) -> None:
    """Only KEY=value lines of the known keys count; anything else in the file is neither
    run nor fatal (a broken file must not drain every node), a bad timeout falls back."""
    if not AIAUDIT.exists():
        pytest.skip("aiaudit is not installed in the venv")
    _, bad = sysctl_roots
    marker = tmp_path / "ran"
    conf = tmp_path / "prolog.env"
    conf.write_text(f"# site settings\nAIAUDIT=\"{AIAUDIT}\"\nAIAUDIT_FAIL_ON='medium'\n"
                    f"AIAUDIT_REPORT={tmp_path}/run/last.json\n"
                    f"AIAUDIT_REASON_FILE={tmp_path}/run/reason\nAIAUDIT_TIMEOUT=ten\n"
                    f"touch {marker}\nAIAUDIT_EXTRA=$(touch {marker})\nif then fi (\n"
                    "export AIAUDIT_FAIL_ON=critical\n"  # not a KEY=value line: ignored
                    "AIAUDIT_RULESET=dl-training")  # the last line, without a newline
    env = {"SLURM_JOB_ID": "1", "SLURM_JOB_USER": "alice", "AIAUDIT_PROLOG_ENV": str(conf)}
    proc = subprocess.run(["/bin/sh", str(PROLOG), "--root", str(bad), "--only",
                           "SYSCTL-VM-SWAPPINESS"], env=env, capture_output=True, text=True,
                          timeout=60, cwd="/")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("aiaudit: FAIL SYSCTL-VM-SWAPPINESS")
    assert not marker.exists()
    report = json.loads((tmp_path / "run" / "last.json").read_text())
    assert report["ruleset"]["name"] == "dl-training"


def test_example_prolog_starts_only_timeout_and_aiaudit(tmp_path: Path, sysctl_roots) -> None:
    """A fit node: the prolog starts `timeout` and `aiaudit`, nothing else (no dirname,
    mkdir once the directories exist, grep, tail, rm), and Python looks up no user (no
    HOME under slurmd: site.py would ask the passwd database for the home directory)."""
    need_program("strace")
    if not AIAUDIT.exists():
        pytest.skip("aiaudit is not installed in the venv")
    good, _ = sysctl_roots
    only = ("--root", str(good), "--only", "SYSCTL-VM-SWAPPINESS")
    proc, trace = _as_slurmd(tmp_path, *only, trace="execve")
    assert proc.returncode == 0, proc.stderr
    assert "mkdir" in _execs(trace)  # first run: creates the report's directory
    proc, trace = _as_slurmd(tmp_path, *only, trace="execve")
    assert proc.returncode == 0, proc.stderr
    execs = _execs(trace)
    assert execs[0] == "sh" and execs[1:3] == ["timeout", AIAUDIT.name], execs
    assert len([e for e in execs[3:] if not e.startswith("python")]) == 0, execs
    # strace -v: the scan gets a HOME, which spares it the passwd lookup that Python's
    # site.py makes without one (shown on the interpreter itself)
    _, trace = _as_slurmd(tmp_path, *only, trace="execve,openat", verbose=True)
    scan = next(ln for ln in trace.splitlines() if f'execve("{AIAUDIT}"' in ln)
    assert '"HOME=/root"' in scan
    assert "/etc/nsswitch.conf" not in trace and '"/etc/passwd"' not in trace
    base = getattr(sys, "_base_executable", sys.executable)
    for env, looks_up in (({}, True), ({"HOME": "/root"}, False)):
        log = tmp_path / "py.log"
        subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat", "-o", str(log), base,
                        "-c", "pass"], env=env, check=True, cwd="/")
        assert ("/etc/nsswitch.conf" in log.read_text()) is looks_up, env


def test_example_prolog_passes_shellcheck() -> None:
    need_program("shellcheck")
    proc = subprocess.run(["shellcheck", "-s", "sh", str(PROLOG)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout


def test_prolog_bench_measures(tmp_path: Path, sysctl_roots, capsys) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("prolog_bench",
                                                  REPO / "bench" / "prolog_bench.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.percentile([5, 1, 4, 2, 3], 95) == 5
    assert bench.percentile([5, 1, 4, 2, 3], 50) == 3
    good, _ = sysctl_roots
    assert bench.main(["-n", "2", "--warmup", "0", "--json", "--root", str(good),
                       "--ruleset", "dl-training", "--", "--only",
                       "SYSCTL-VM-SWAPPINESS"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["runs"] == 2 and res["exit_codes"] == [0]
    assert 0 < res["wall_median_s"] <= res["wall_p95_s"] and res["scan_median_s"] is not None
    assert "--prolog" in res["command"] and "--ruleset dl-training" in res["command"]


def test_prolog_bench_script_mode(tmp_path: Path, sysctl_roots, capsys) -> None:
    """``--script``: the prolog as slurmd runs it, a no-op prolog and the scan alone."""
    import importlib.util

    if not AIAUDIT.exists():
        pytest.skip("aiaudit is not installed in the venv")
    spec = importlib.util.spec_from_file_location("prolog_bench",
                                                  REPO / "bench" / "prolog_bench.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    good, _ = sysctl_roots
    assert bench.main(["--script", str(PROLOG), "--aiaudit", str(AIAUDIT), "-n", "1",
                       "--warmup", "0", "--json", "--ruleset", "dl-training", "--user", "root",
                       "--", "--root", str(good), "--only", "SYSCTL-VM-SWAPPINESS"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert {n: c["exit_codes"] for n, c in res["cases"].items()} == {
        "noop prolog": [0], "prolog script": [0], "scan alone": [0]}
    assert res["cases"]["prolog script"]["cpu_median_s"] > 0
    assert res["cpu_added_over_scan"] > 0 and res["wall_added_over_scan"] > 0


def test_reason_line_escapes_control_characters() -> None:
    """A subject or message from the host cannot send an escape sequence to a terminal or
    the journal, nor fake a second ``aiaudit: `` line for the prolog script."""
    from dataclasses import replace

    from aiaudit.core.model import Severity

    f = finding("R", "fail", "eth0\x1b]0;owned\x07")
    f = replace(f, result=replace(f.result, message="bad\raiaudit: PASS all\x1b[2J"))
    line = reason_line(run_of([f]), Severity.INFO, 1)
    assert line is not None
    assert not any(ord(c) < 32 or ord(c) == 127 for c in line), repr(line)
    assert "\\x1b" in line and line.startswith("aiaudit: FAIL R (eth0")
