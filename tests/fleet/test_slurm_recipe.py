"""contrib/slurm/aiaudit-fleet.sh against a real one-node Slurm (slurmctld, slurmd and
munged on this host, private ports, key and state; started and stopped by the test)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers import AIAUDIT_CMD, AIAUDIT_SCRIPT, build_root

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "contrib" / "slurm" / "aiaudit-fleet.sh"
AIAUDIT = AIAUDIT_SCRIPT  # the one program the script runs on each node and for fleet
START_TIMEOUT = 25.0

pytestmark = pytest.mark.slow


def _unavailable(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"Slurm must run in CI: {why}")
    pytest.skip(why)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(pidfile: Path) -> None:
    try:
        pid = int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A running one-node cluster; the environment that points srun at it."""
    for prog in ("munged", "slurmctld", "slurmd", "srun", "sinfo"):
        if shutil.which(prog) is None and not os.path.exists(f"/usr/sbin/{prog}"):
            _unavailable(f"{prog} not installed (Debian slurm-wlm, munge)")
    if os.geteuid() != 0:
        _unavailable("slurmd needs root")
    if not AIAUDIT.exists():
        _unavailable(f"no aiaudit console script next to the interpreter ({AIAUDIT})")
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool", "munge"):
        (d / sub).mkdir(mode=0o700)
    key = d / "munge" / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o600)
    host = socket.gethostname()
    conf = d / "slurm.conf"
    conf.write_text(f"""\
ClusterName=aiaudittest
SlurmctldHost={host}
SlurmctldPort={_port()}
SlurmdPort={_port()}
AuthType=auth/munge
AuthInfo=socket={d}/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
MpiDefault=none
ReturnToService=2
NodeName={host} CPUs={os.cpu_count() or 1} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    for var in [v for v in env if v.startswith("SLURM_") and v != "SLURM_CONF"]:
        del env[var]  # not inside the caller's allocation, if any
    pidfiles = [d / "slurmd.pid", d / "slurmctld.pid", d / "munge" / "pid"]
    try:
        steps = [["munged", f"--key-file={key}", f"--socket={d}/munge/sock",
                  f"--pid-file={d}/munge/pid", f"--log-file={d}/munge/log",
                  f"--seed-file={d}/munge/seed", "--force"],
                 ["slurmctld", "-f", str(conf)], ["slurmd", "-f", str(conf)]]
        for cmd in steps:
            res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=20)
            if res.returncode:
                _unavailable(f"{cmd[0]} did not start: {res.stderr.strip()[:300]}")
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            res = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True,
                                 text=True, timeout=10)
            if res.stdout.strip() == "idle":
                break
            if time.monotonic() > deadline:
                log = (d / "slurmd.log").read_text()[-500:] if (d / "slurmd.log").exists() \
                    else ""
                _unavailable(f"the node did not become idle: {res.stdout} {res.stderr} {log}")
            time.sleep(0.5)
        yield env
    finally:
        for p in pidfiles:
            _stop(p)


def _root(tmp_path: Path) -> Path:
    return build_root(tmp_path / "root", {
        "etc/hostname": "gpu001\n",
        "etc/machine-id": "0123456789abcdef0123456789abcdef\n",
        "etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n'
                          'VERSION_ID="12"\n',
    })


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], env={**env, "AIAUDIT": str(AIAUDIT)},
                          capture_output=True, text=True, timeout=120)


def test_stream_from_srun_into_fleet(slurm: dict[str, str], tmp_path: Path) -> None:
    root = _root(tmp_path)
    res = _run(slurm, "-N", "1", "-f", "--format", "-f", "json", "--", "--root", str(root))
    assert res.stdout, res.stderr
    doc = json.loads(res.stdout)
    assert doc["groups"][0]["nodes"] == {"count": 1, "hosts": "gpu001"}
    assert doc["problems"] == []
    direct = subprocess.run([*AIAUDIT_CMD, "scan", "--root", str(root), "--format", "json"],
                            capture_output=True, text=True, timeout=60)
    alone = subprocess.run([*AIAUDIT_CMD, "fleet", "-"], input=direct.stdout,
                           capture_output=True, text=True, timeout=60)
    assert res.returncode == alone.returncode == doc["summary"]["exit_code"]
    failing = {r["id"] for r in doc["groups"][0]["rules"] if r["failing"]["count"]}
    scanned = {r["rule_id"] for r in json.loads(direct.stdout)["results"]
               if r["status"] == "fail"}
    assert failing == scanned


def test_reports_to_a_shared_directory(slurm: dict[str, str], tmp_path: Path) -> None:
    root = _root(tmp_path)
    shared = tmp_path / "shared"
    res = _run(slurm, "-d", str(shared), "-f", "--format", "-f", "json", "--",
               "--root", str(root))
    files = list(shared.glob("*.json"))
    assert [f.name for f in files] == [f"{socket.gethostname()}.json"], res.stderr
    doc = json.loads(res.stdout)
    assert doc["groups"][0]["nodes"]["hosts"] == "gpu001"
    assert res.returncode == doc["summary"]["exit_code"]
