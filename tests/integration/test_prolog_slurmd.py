"""``examples/slurm/prolog.sh`` run by a real slurmd: a one-node Slurm cluster on loopback
(slurmctld, slurmd, munged, all on private ports, sockets and directories under a temp
directory).  A failing pre-flight drains the node with the rule named in slurmd's log, a
passing one does not, and a hung scan does not hold the job past the script's deadline.

The prolog's settings come from its settings file (slurmd passes only SLURM_* variables):
slurm.conf's ``Prolog=`` is a two-line wrapper that names the test's file in
``AIAUDIT_PROLOG_ENV`` and runs the example script unchanged.

Where libnss-extrausers is installed, the daemons run in a private mount namespace in which
that NSS module serves a directory user, ``ldapuser`` (as sssd/LDAP users are on a cluster;
:mod:`tests.linux.accounts.nss_namespace`), with the namespace's own limits.conf, sshd PAM
stack and sshd_config: a job of that user runs through the real slurmd, and its prolog scans
the live node for it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.linux.accounts import nss_namespace as ns
from tests.modes_support import AIAUDIT, REPO

pytestmark = pytest.mark.slow

PROLOG = REPO / "examples" / "slurm" / "prolog.sh"
PROGRAMS = ("slurmctld", "slurmd", "munged", "srun", "sinfo", "scontrol")


def _need() -> None:
    why = None
    if os.geteuid() != 0:
        why = "needs root (slurmd runs prologs as root)"
    missing = [p for p in PROGRAMS if shutil.which(p) is None and
               not os.access(f"/usr/sbin/{p}", os.X_OK)]
    if why is None and missing:
        why = f"not installed: {', '.join(missing)} (Debian slurm-wlm, munge)"
    if why is None and not AIAUDIT.exists():
        why = "aiaudit is not installed in the venv"
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _exe(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class Cluster:
    """The running daemons and how to talk to them."""

    def __init__(self, d: Path) -> None:
        self.d = d
        self.node = socket.gethostname().split(".")[0]
        self.env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SLURM_CONF": str(d / "slurm.conf")}
        self.procs: list[subprocess.Popen] = []
        self.settings = d / "prolog.env"
        self.binds: dict[str, Path] | None = None
        """The namespace of the directory user (None: libnss-extrausers is missing)."""
        self.limits = d / "ns" / "security" / "limits.conf"

    def run(self, *argv: str, timeout: float = 30, in_ns: bool = False
            ) -> subprocess.CompletedProcess:
        """A client command; ``in_ns``: in the daemons' namespace (it names the directory
        user, which only NSS there knows)."""
        full = list(argv)
        if in_ns:
            assert self.binds is not None
            full = ns.wrap(self.binds, full)
        return subprocess.run(full, env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def reason(self) -> str:
        """The node's drain/down reason ("" when it has none; sinfo prints "none")."""
        out = self.run("sinfo", "-h", "-N", "-o", "%E").stdout.strip()
        return "" if out == "none" else out

    def state(self) -> str:
        return self.run("sinfo", "-h", "-N", "-o", "%T").stdout.strip()

    def log(self) -> str:
        p = self.d / "log" / "slurmd.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def resume(self) -> None:
        self.run("scontrol", "update", f"nodename={self.node}", "state=resume")
        self.wait_idle()

    def wait_idle(self, limit: float = 20) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            if self.state() == "idle" and not self.reason():
                return
            time.sleep(0.3)
        raise AssertionError(f"node not idle: {self.state()} {self.reason()}\n{self.log()}")

    def configure(self, **settings: str) -> None:
        self.settings.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    _need()
    d = tmp_path_factory.mktemp("slurm")
    # slurmstepd reads a batch job's script from the spool as the job's user: the spool is
    # outside pytest's root-only temp folder (a job of the directory user runs there)
    spool = Path(tempfile.mkdtemp(prefix="aiaudit-slurmd-spool-"))
    spool.chmod(0o755)
    for sub in ("munge", "state", "log"):
        (d / sub).mkdir()
    c = Cluster(d)
    key = d / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    sock = d / "munge" / "sock"
    subprocess.run([_exe("munged"), "--force", f"--key-file={key}", f"--socket={sock}",
                    f"--pid-file={d}/munge/pid", f"--log-file={d}/munge/log",
                    f"--seed-file={d}/munge/seed"], check=True, capture_output=True,
                   timeout=30)
    wrapper = d / "prolog-wrapper.sh"
    wrapper.write_text(f"#!/bin/sh\nAIAUDIT_PROLOG_ENV={c.settings}\nexport AIAUDIT_PROLOG_ENV\n"
                       f"exec /bin/sh {PROLOG}\n")
    wrapper.chmod(0o755)
    (d / "slurm.conf").write_text(f"""ClusterName=aiaudit-test
SlurmctldHost={c.node}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
StateSaveLocation={d}/state
SlurmdSpoolDir={spool}
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/linear
MpiDefault=none
ReturnToService=2
Prolog={wrapper}
PrologFlags=Alloc
PrologEpilogTimeout=60
NodeName={c.node} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=p Nodes={c.node} Default=YES MaxTime=INFINITE State=UP
""")
    if ns.why_not() is None:
        c.binds = ns.tree(d / "ns", limits="# written by the tests\n")
    try:
        for argv in ([_exe("slurmctld"), "-D", "-i"], [_exe("slurmd"), "-D"]):
            if c.binds is not None:
                argv = ns.wrap(c.binds, argv)
            c.procs.append(subprocess.Popen(argv, env=c.env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
            time.sleep(1)
        c.wait_idle()
        yield c
    finally:
        for p in reversed(c.procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(spool, ignore_errors=True)
        pid = d / "munge" / "pid"
        if pid.exists():
            try:
                os.kill(int(pid.read_text().strip()), 15)
            except (ProcessLookupError, ValueError):
                pass


def _aiaudit_on(tmp: Path, name: str, root: Path) -> Path:
    """An ``AIAUDIT=`` program that scans ``root`` for one rule (slurmd gives the prolog no
    arguments, so the wrapper adds them)."""
    w = tmp / name
    w.write_text(f'#!/bin/sh\nexec {AIAUDIT} "$@" --root {root} --only SYSCTL-VM-SWAPPINESS\n')
    w.chmod(0o755)
    return w


def _root(tmp: Path, name: str, swappiness: int) -> Path:
    r = tmp / name
    (r / "etc/sysctl.d").mkdir(parents=True)
    (r / "etc/sysctl.d/60-train.conf").write_text(f"vm.swappiness = {swappiness}\n")
    return r


def test_failing_preflight_drains_with_the_rule_in_slurmds_log(cluster: Cluster,
                                                               tmp_path: Path) -> None:
    exe = _aiaudit_on(tmp_path, "bad", _root(tmp_path, "bad-root", 60))
    cluster.configure(AIAUDIT=str(exe), AIAUDIT_RULESET="dl-training",
                      AIAUDIT_FAIL_ON="medium", AIAUDIT_REPORT=str(tmp_path / "last.json"),
                      AIAUDIT_REASON_FILE=str(tmp_path / "reason"))
    r = cluster.run("srun", "-N1", "true", timeout=60)
    assert r.returncode != 0
    time.sleep(0.5)
    assert cluster.reason() == "Prolog error", cluster.reason()
    assert "aiaudit: FAIL SYSCTL-VM-SWAPPINESS" in cluster.log()
    assert (tmp_path / "reason").read_text().startswith("aiaudit: FAIL SYSCTL-VM-SWAPPINESS")
    cluster.resume()


def test_passing_preflight_runs_the_job(cluster: Cluster, tmp_path: Path) -> None:
    exe = _aiaudit_on(tmp_path, "good", _root(tmp_path, "good-root", 10))
    cluster.configure(AIAUDIT=str(exe), AIAUDIT_RULESET="dl-training",
                      AIAUDIT_FAIL_ON="medium", AIAUDIT_REPORT=str(tmp_path / "last.json"),
                      AIAUDIT_REASON_FILE=str(tmp_path / "reason"))
    r = cluster.run("srun", "-N1", "echo", "ran", timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ran", r.stderr
    cluster.wait_idle()  # not drained: back to idle once the job completes
    assert not cluster.reason()
    assert (tmp_path / "last.json").exists()


def test_hung_scan_does_not_hold_the_job_past_the_deadline(cluster: Cluster,
                                                           tmp_path: Path) -> None:
    hang = tmp_path / "hang"
    hang.write_text("#!/bin/sh\nexec sleep 600\n")
    hang.chmod(0o755)
    cluster.configure(AIAUDIT=str(hang), AIAUDIT_TIMEOUT="1",
                      AIAUDIT_REPORT=str(tmp_path / "last.json"),
                      AIAUDIT_REASON_FILE=str(tmp_path / "reason"))
    t0 = time.monotonic()
    r = cluster.run("srun", "-N1", "echo", "ran", timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 0 and r.stdout.strip() == "ran", r.stderr
    # a deadline test, so wall time: the documented worst case of the script is
    # AIAUDIT_TIMEOUT + 7 s; the bound is generous (a loaded machine) and still far below
    # the 600 s the hung scan would hold the job
    assert took < 1 + 7 + 40, took
    cluster.wait_idle()
    assert not cluster.reason()
    assert not (tmp_path / "last.json").exists()  # killed: no report stands for this job


SITE_LIMITS = ("ruleset: site-preflight\nversion: '1'\nextends: slurm-preflight\n"
               "overrides:\n"
               "  LIMITS-SLURM-JOB: {params: {nofile_min: 2048, memlock_min: %d}}\n")
"""Minimums slurmd's own hard limits allow here (it runs with the test's limits, and the
test may not raise them), above systemd's default soft nofile (1024): had the directory user
not been found, the job's estimate would be that default and fail on nofile, not memlock."""


def _memlock_min_kib() -> int:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    return 1024 if hard == resource.RLIM_INFINITY else max(2, min(1024, hard // 1024))


def test_directory_user_with_low_memlock_drains(cluster: Cluster, tmp_path: Path) -> None:
    """A job of ``ldapuser``, a user only NSS knows (libnss-extrausers in the daemons'
    namespace), whose directory group ``@gpu`` gets a memlock below the minimum: the
    prolog's live scan resolves the user and its groups through NSS as pam_limits does, and
    slurmd drains the node with that memlock in the reason.  With enough memlock the same
    user's job runs."""
    if cluster.binds is None:
        ns.need_namespace()
    least = _memlock_min_kib()
    site = tmp_path / "site.yaml"
    site.write_text(SITE_LIMITS % least)
    w = tmp_path / "live"
    w.write_text(f'#!/bin/sh\nexec {AIAUDIT} "$@" --only LIMITS-SLURM-JOB\n')
    w.chmod(0o755)
    # a live scan of the node: a deadline generous for a loaded machine, within slurm.conf's
    # PrologEpilogTimeout=60 (the script's worst case is AIAUDIT_TIMEOUT + 7 s)
    cluster.configure(AIAUDIT=str(w), AIAUDIT_RULESET=str(site), AIAUDIT_TIMEOUT="30",
                      AIAUDIT_REPORT=str(tmp_path / "last.json"),
                      AIAUDIT_REASON_FILE=str(tmp_path / "reason"))
    low = max(1, least // 2)
    cluster.limits.write_text(f"@gpu - memlock {low}\n@gpu - nofile 4096\n")
    r = cluster.run("srun", "-N1", "--uid=ldapuser", "--chdir=/tmp", "true", timeout=60,
                    in_ns=True)
    assert r.returncode != 0
    time.sleep(0.5)
    assert cluster.reason() == "Prolog error", cluster.reason()
    want = f"aiaudit: FAIL LIMITS-SLURM-JOB (slurm job memlock: soft {low} KiB"
    assert want in cluster.log()
    assert (tmp_path / "reason").read_text().startswith(want)
    report = json.loads((tmp_path / "last.json").read_text())
    assert report["training_user"] == {"name": "ldapuser", "source": "$SLURM_JOB_USER"}
    cluster.resume()
    cluster.limits.write_text(f"@gpu - memlock {least}\n@gpu - nofile 4096\n")
    # a batch job (srun would drop to ldapuser before reaching the test's munge socket)
    r = cluster.run("sbatch", "--parsable", "--uid=ldapuser", "--chdir=/tmp",
                    "--output=/dev/null", "--wrap", "id -un", in_ns=True)
    assert r.returncode == 0, r.stderr
    job = _finished(cluster, r.stdout.strip().split(";")[0])
    assert "UserId=ldapuser(5001)" in job and "JobState=COMPLETED" in job, job
    assert "ExitCode=0:0" in job, job
    cluster.wait_idle()
    assert not cluster.reason()
    assert not (tmp_path / "reason").exists()  # a fit node clears the old reason


def _finished(cluster: Cluster, job_id: str, limit: float = 60) -> str:
    """``scontrol show job`` of ``job_id`` once it has ended (it runs as its user: the
    state says whether it ran)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        out = cluster.run("scontrol", "show", "job", job_id, in_ns=True).stdout
        if any(f"JobState={s}" in out for s in ("COMPLETED", "FAILED", "CANCELLED",
                                                 "NODE_FAIL", "TIMEOUT")):
            return out
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} did not end: {out}\n{cluster.log()}")


KMSG_ROOTS = REPO / "tests" / "fixtures" / "roots"
XID_RULES = ("GPU-XID-RESET-REQUIRED", "GPU-XID-APP-REPEATED")


def _aiaudit_kmsg(tmp: Path, name: str, root: Path) -> Path:
    """An ``AIAUDIT=`` program that scans ``root`` (a ``--live`` snapshot whose kernel log
    is its ``dev/kmsg``) for the Xid rules of the shipped slurm-preflight ruleset."""
    w = tmp / name
    w.write_text(f'#!/bin/sh\nexec {AIAUDIT} "$@" --root {root} --live '
                 f'--only {" ".join(XID_RULES)}\n')
    w.chmod(0o755)
    return w


def test_xid79_in_the_kernel_log_drains_with_the_rule_in_the_reason(cluster: Cluster,
                                                                   tmp_path: Path) -> None:
    """A node whose GPU logged Xid 79 (fallen off the bus): the prolog, with its defaults
    (slurm-preflight, --fail-on high), drains it and names the rule, the GPU and the Xid."""
    exe = _aiaudit_kmsg(tmp_path, "xid79", KMSG_ROOTS / "kmsg-xid79-off-bus" / "root")
    cluster.configure(AIAUDIT=str(exe), AIAUDIT_REPORT=str(tmp_path / "last.json"),
                      AIAUDIT_REASON_FILE=str(tmp_path / "reason"))
    r = cluster.run("srun", "-N1", "true", timeout=60)
    assert r.returncode != 0
    time.sleep(0.5)
    assert cluster.reason() == "Prolog error", cluster.reason()
    want = ("aiaudit: FAIL GPU-XID-RESET-REQUIRED (GPU 0000:2b:00.0: Xid 79 (RESTART_BM) x1, "
            "expected no Xid 79 (RESTART_BM) since boot)")
    assert want in cluster.log()
    assert (tmp_path / "reason").read_text().strip() == want
    report = json.loads((tmp_path / "last.json").read_text())
    statuses = {f["rule_id"]: f["status"] for f in report["results"]}
    assert statuses == {"GPU-XID-RESET-REQUIRED": "fail", "GPU-XID-APP-REPEATED": "pass"}
    cluster.resume()


def test_an_old_xid13_alone_does_not_drain(cluster: Cluster, tmp_path: Path) -> None:
    """A node that logged one application fault (Xid 13) months ago: the job runs."""
    exe = _aiaudit_kmsg(tmp_path, "xid13", KMSG_ROOTS / "kmsg-old-xid13" / "root")
    cluster.configure(AIAUDIT=str(exe), AIAUDIT_REPORT=str(tmp_path / "last.json"),
                      AIAUDIT_REASON_FILE=str(tmp_path / "reason"))
    r = cluster.run("srun", "-N1", "echo", "ran", timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ran", r.stderr
    cluster.wait_idle()
    assert not cluster.reason()
    assert not (tmp_path / "reason").exists()
    report = json.loads((tmp_path / "last.json").read_text())
    assert {f["rule_id"]: f["status"] for f in report["results"]} == \
        {"GPU-XID-RESET-REQUIRED": "pass", "GPU-XID-APP-REPEATED": "pass"}
