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
    assert ids == {"GPU-DRIVER-LIBRARY-MATCH", "GPU-COUNT", "GPU-MEMORY-HEALTH", "LIMITS-SLURM-JOB",
                   "MEM-DEV-SHM-SIZE", "CPU-GOVERNOR-PERFORMANCE", "AMDGPU-ROCM-DRIVER-COMPAT",
                   "AMDGPU-COUNT", "AMDGPU-DEVICE-ACCESS", "AMDGPU-RAS-UNCORRECTABLE",
                   "AMDGPU-RAS-BAD-PAGES",
                   # issue 28, fabric and links / clean hand-over
                   "RDMA-PORTS-ACTIVE", "RDMA-LINK-FLAPPING", "GPU-IDLE-AT-HANDOVER",
                   "GPU-DEVICE-NODES", "GPU-MIG-SETTLED", "GPU-FABRIC-REGISTERED",
                   "FABRIC-MANAGER-RUNNING", "GPU-NIC-TOPOLOGY", "NVLINK-LINKS-UP",
                   "NVLINK-ERRORS",
                   # issue 28, kernel-log faults
                   "GPU-XID-RESET-REQUIRED", "GPU-XID-APP-REPEATED", "GPU-NVRM-OFF-BUS",
                   "NVSWITCH-SXID-FATAL", "PCIE-AER-UNCORRECTED", "PCIE-AER-CORRECTED-RATE",
                   "MCE-UNCORRECTED", "AMDGPU-RAS-LOG-UNCORRECTABLE"}
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


# ------------------------------------------------------------------ a directory (NSS) user
SITE_LIMITS = ("ruleset: site-preflight\nversion: '1'\nextends: slurm-preflight\n"
               "overrides:\n"
               "  LIMITS-SLURM-JOB: {params: {nofile_min: 2048, memlock_min: %d}}\n")
"""Minimums below this machine's own hard limits (slurmd, unit or test process, may not
grant unlimited memlock here), above systemd's default soft nofile (1024): a job that got
the default because its user was not found fails on nofile, not on memlock."""


def _memlock_min_kib() -> int:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    return 1024 if hard == resource.RLIM_INFINITY else max(2, min(1024, hard // 1024))


def directory_user_prolog(tmp_path: Path, memlock_kib: int) -> subprocess.CompletedProcess:
    """The prolog's scan (live, the real /) for SLURM_JOB_USER=ldapuser, a user only NSS
    knows (libnss-extrausers in a private mount namespace), whose groups give it
    ``memlock_kib`` and 4096 open files through limits.conf (``@gpu``: a directory
    group)."""
    from tests.linux.accounts import nss_namespace as ns

    tmp_path.mkdir()
    site = tmp_path / "site.yaml"
    site.write_text(SITE_LIMITS % _memlock_min_kib())
    binds = ns.tree(tmp_path / "ns", limits=f"@gpu - memlock {memlock_kib}\n"
                    "@gpu - nofile 4096\n",
                    slurm_conf="ClusterName=c\nSlurmctldHost=localhost\n")
    # --timeout: the prolog's 10 s deadline, made generous for a loaded machine
    argv = [sys.executable, "-m", "aiaudit", *PROLOG, "--ruleset", str(site), "--only",
            "LIMITS-SLURM-JOB", "--timeout", "60"]
    return ns.run(binds, argv, env={"PATH": "/usr/bin:/bin", "SLURM_JOB_USER": "ldapuser",
                                    "HOME": "/root"})


def test_directory_user_with_low_memlock_drains(tmp_path: Path) -> None:
    """The job's user exists only in the directory: its SSH session's limits (through NSS,
    as pam_limits resolves it and its @gpu group) are what the job inherits, so a low
    memlock drains the node with that value in the reason, and a sufficient one does not
    (systemd's default, what an unresolved user would be estimated with, would fail on
    nofile instead)."""
    from tests.linux.accounts import nss_namespace as ns

    ns.need_namespace()
    low = max(1, _memlock_min_kib() // 2)
    r = directory_user_prolog(tmp_path / "low", low)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.startswith(f"aiaudit: FAIL LIMITS-SLURM-JOB (slurm job memlock: soft "
                               f"{low} KiB"), r.stderr
    ok = directory_user_prolog(tmp_path / "ok", _memlock_min_kib())
    assert (ok.returncode, ok.stderr) == (0, ""), ok.stderr


@pytest.mark.parametrize("body", [None, "exit 2", "exit 4", "sleep 30",
                                  "echo 'aiaudit: FAIL NEW-RULE (x)' >&2; exit 1"])
def test_prolog_leaves_no_stale_reason(tmp_path: Path, body: str | None) -> None:
    """The reason file explains the last drain; a later run that does not drain (aiaudit
    missing, a usage error, an aiaudit bug, a scan killed at the deadline) removes it, and
    a run that drains replaces it."""
    reason = tmp_path / "run" / "prolog.reason"
    reason.parent.mkdir()
    reason.write_text("aiaudit: FAIL OLD-RULE (from an earlier job)\n")
    exe = tmp_path / "missing" if body is None else _fake_aiaudit(tmp_path, body)
    proc = _slurmd_like(tmp_path, f"AIAUDIT={exe}\nAIAUDIT_TIMEOUT=1\n"
                        f"AIAUDIT_REPORT={tmp_path}/run/last.json\n"
                        f"AIAUDIT_REASON_FILE={reason}\n")
    if body is not None and body.endswith("exit 1"):
        assert proc.returncode == 1
        assert reason.read_text() == "aiaudit: FAIL NEW-RULE (x)\n"
        return
    assert proc.returncode == 0, proc.stderr  # never drains for its own breakage
    assert not reason.exists(), reason.read_text()
