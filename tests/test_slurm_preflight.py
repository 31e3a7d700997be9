"""The shipped ``slurm-preflight`` ruleset, run as the Slurm prolog runs it: fast, runtime
state only, exit 1 with a one-line reason only for a node that should be drained."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiaudit.core import plugins, ruleset
from tests.helpers import ROOTS, CpuTime, cli

PROLOG = ["scan", "--prolog", "--ruleset", "slurm-preflight", "--fail-on", "high"]


def test_ruleset_ships_and_validates() -> None:
    rs = ruleset.load("slurm-preflight", plugins.registry(), validate=True)
    assert rs.settings["fail_on"] == "high"
    ids = {r.id for r in rs.rules}
    assert ids == {"GPU-DRIVER-LIBRARY-MATCH", "GPU-COUNT", "LIMITS-SLURM-JOB",
                   "MEM-DEV-SHM-SIZE", "CPU-GOVERNOR-PERFORMANCE"}
    # the same rule ids as dl-training (a SIEM sees one id per problem), runtime only
    full = {r.id: r for r in ruleset.load("dl-training", plugins.registry()).rules}
    for r in rs.rules:
        assert full[r.id].check.id == r.check.id
        if "persist" in r.check.params_schema.get("properties", {}):
            assert r.params["persist"] is False, r.id


def test_driver_mismatch_drains_with_one_line_reason() -> None:
    root = ROOTS / "gpu-module-library-mismatch" / "root"
    r = cli(*PROLOG, "--root", str(root), "--live", "--format", "json",
            env={"SLURM_JOB_USER": "root"})
    assert r.code == 1, r.err
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("aiaudit: FAIL GPU-DRIVER-LIBRARY-MATCH")
    assert len(lines[0]) <= 250


def test_healthy_node_passes(make_root) -> None:
    # a CPU node: no GPU, no Slurm installed here, a large /dev/shm, no cpufreq (a VM)
    root = make_root({
        "/proc/meminfo": "MemTotal:       16384000 kB\nSwapTotal:             0 kB\n",
        "/proc/mounts": "tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=12000000k 0 0\n",
        "/etc/os-release": "ID=debian\nVERSION_ID=12\n",
    }, dirs=("/sys/devices/system/cpu", "/sys/bus/pci/devices"))
    r = cli(*PROLOG, "--root", str(root), "--live", env={"SLURM_JOB_USER": "alice"})
    assert r.code == 0, r.out + r.err
    assert r.err.strip() == ""


def test_small_dev_shm_drains(make_root) -> None:
    root = make_root({
        "/proc/meminfo": "MemTotal:       16384000 kB\n",
        "/proc/mounts": "tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=65536k 0 0\n",
    }, dirs=("/sys/devices/system/cpu", "/sys/bus/pci/devices"))
    r = cli(*PROLOG, "--root", str(root), "--live", env={"SLURM_JOB_USER": "alice"})
    assert r.code == 1
    assert r.err.startswith("aiaudit: FAIL MEM-DEV-SHM-SIZE")


def test_prolog_on_this_host_is_fast_and_never_drains_for_lack_of_slurm() -> None:
    """The real entry point, live on this machine: well under the 10 s prolog deadline."""
    exe = shutil.which("aiaudit", path=str(Path(sys.executable).parent))
    argv = [exe] if exe else [sys.executable, "-m", "aiaudit"]
    with CpuTime() as t:
        p = subprocess.run([*argv, *PROLOG, "--format", "json"], capture_output=True,
                           text=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin", "SLURM_JOB_USER": "root"})
    assert p.returncode in (0, 1), p.stderr
    assert t.seconds < 5, f"prolog scan took {t.seconds:.1f} s of CPU"


@pytest.mark.parametrize("rule", ["GPU-COUNT", "GPU-DRIVER-LIBRARY-MATCH"])
def test_site_override_requires_gpus(tmp_path: Path, make_root, rule: str) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("ruleset: site-preflight\nversion: '1'\nextends: slurm-preflight\n"
                    "overrides:\n"
                    "  GPU-COUNT: {params: {min_count: 8, require_gpu: true}}\n"
                    "  GPU-DRIVER-LIBRARY-MATCH: {params: {require_gpu: true}}\n")
    root = make_root({"/proc/meminfo": "MemTotal: 1 kB\n"}, dirs=("/sys/bus/pci/devices",))
    r = cli("scan", "--prolog", "--ruleset", str(site), "--root", str(root), "--live",
            "--only", rule, env={"SLURM_JOB_USER": "alice"})
    assert r.code == 1, r.out + r.err
    assert rule in r.err


# ------------------------------------------------------------------ examples/slurm/prolog.sh
SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "slurm" / "prolog.sh"


def _slurmd_like(tmp_path: Path, settings: str, *args: str) -> subprocess.CompletedProcess:
    """Run the example prolog as slurmd does: only SLURM_* variables (plus the test's
    pointer to its settings file), no PATH, no arguments beyond the test's."""
    env_file = tmp_path / "prolog.env"
    env_file.write_text(settings)
    env = {"SLURM_JOB_ID": "7", "SLURM_JOB_USER": "alice", "SLURM_CONF": "/etc/slurm/slurm.conf",
           "AIAUDIT_PROLOG_ENV": str(env_file)}
    return subprocess.run(["/bin/sh", str(SCRIPT), *args], env=env, capture_output=True,
                          text=True, timeout=60)


def _fake_aiaudit(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "fake-aiaudit"
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(0o755)
    return exe


def test_prolog_reads_its_settings_from_the_file(tmp_path: Path) -> None:
    """slurmd passes no AIAUDIT_* variables: the file's values reach aiaudit; a line that
    is not a plain AIAUDIT assignment is ignored, not executed."""
    argv = tmp_path / "argv"
    exe = _fake_aiaudit(tmp_path, f'printf "%s\\n" "$@" > {argv}')
    report = tmp_path / "run" / "last.json"
    settings = (f"AIAUDIT={exe}\nAIAUDIT_FAIL_ON=critical\nAIAUDIT_TIMEOUT='3'\n"
                f'AIAUDIT_REPORT="{report}"\nAIAUDIT_REASON_FILE={tmp_path}/reason\n'
                f"# AIAUDIT_RULESET=ignored\nAIAUDIT_X$(touch {tmp_path}/pwned)=1\n"
                f"touch {tmp_path}/pwned2\n")
    proc = _slurmd_like(tmp_path, settings)
    assert proc.returncode == 0, proc.stderr
    got = argv.read_text().split("\n")
    assert got[got.index("--fail-on") + 1] == "critical"
    assert got[got.index("--timeout") + 1] == "3"
    assert got[got.index("--ruleset") + 1] == "slurm-preflight"
    assert f"json:{report}" in got
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


@pytest.mark.parametrize("body", ["exit 4", "sleep 30"])
def test_prolog_leaves_no_stale_report_when_the_scan_fails(tmp_path: Path, body) -> None:
    report = tmp_path / "run" / "last.json"
    report.parent.mkdir()
    report.write_text('{"from": "an earlier job"}')
    exe = _fake_aiaudit(tmp_path, f'echo partial > {report}; {body}')
    t0 = time.monotonic()
    proc = _slurmd_like(tmp_path, f"AIAUDIT={exe}\nAIAUDIT_TIMEOUT=1\n"
                        f"AIAUDIT_REPORT={report}\nAIAUDIT_REASON_FILE={tmp_path}/reason\n")
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr  # never drains for its own breakage
    assert not report.exists()
    # a deadline test, so wall time: the documented worst case is AIAUDIT_TIMEOUT + 7 s;
    # the bound is generous for a loaded machine and still below the 30 s sleep
    assert took < 1 + 7 + 15, took
