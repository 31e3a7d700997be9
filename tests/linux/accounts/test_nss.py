"""Users and groups through this machine's NSS (live scans): answers, bounds, a hung source.

The resolver is tested on its own with lookups that block (no NSS needed), then with a real
NSS module, libnss-extrausers, configured inside a private mount namespace (the machine's
``/etc`` is untouched): its users are what sssd/LDAP users are to glibc, users no file of
``/etc`` lists.  A FIFO in place of one of its files makes it hang the way a directory server
that does not answer does.  Those tests need root, ``unshare`` and libnss-extrausers;
they skip without them, and fail under CI (``CI`` set).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from aiaudit.core.errors import HostError, UsageError
from aiaudit.core.host import Deadline, Host
from aiaudit.linux.accounts import nss, users
from tests.helpers import CpuTime
from tests.linux.accounts import nss_namespace as ns

LIMIT = 2.0
"""Seconds a lookup may take in these tests (``Host.command_timeout``)."""


# ------------------------------------------------------------------ the resolver alone
def _resolver(tmp_path: Path, limit: float = 0.2, deadline: float | None = None
              ) -> nss.Resolver:
    host = Host(str(tmp_path), command_timeout=limit, deadline=Deadline(deadline))
    return nss.Resolver(host)


def test_answers_are_asked_once_and_kept(tmp_path: Path) -> None:
    r = _resolver(tmp_path)
    calls = []

    def fn() -> str:
        calls.append(1)
        return "answer"

    assert [r.ask(("k",), "q", fn) for _ in range(3)] == ["answer"] * 3
    assert calls == [1]


def test_a_lookup_that_does_not_answer_is_abandoned_and_nss_not_asked_again(
        tmp_path: Path) -> None:
    """The first lookup waits its bound; after it NSS counts as stuck: other lookups fail
    at once (a scan of seven rules must not wait seven times), the same one too."""
    r = _resolver(tmp_path, limit=0.2)
    release = threading.Event()
    started = []
    try:
        t0 = time.monotonic()
        with pytest.raises(nss.NssTimeout, match=r"NSS did not answer getpwnam\('x'\) within "
                                                 r"0\.2 s"):
            r.ask(("pw", "x"), "getpwnam('x')", lambda: release.wait(60))
        first = time.monotonic() - t0
        t0 = time.monotonic()
        with pytest.raises(nss.NssTimeout, match=r"getgrnam\('g'\) was not asked"):
            r.ask(("gr", "g"), "getgrnam('g')", lambda: started.append(1))
        with pytest.raises(nss.NssTimeout):
            r.ask(("pw", "x"), "getpwnam('x')", lambda: started.append(1))
        later = time.monotonic() - t0
    finally:
        release.set()
    assert not started  # no thread was started for the later lookups
    # a deadline test, so wall time: the bound is 0.2 s; generous for a loaded machine and
    # still far below the 60 s the lookup would block
    assert 0.15 < first < 10 and later < 0.15, (first, later)


def test_the_wait_stops_at_the_scan_deadline(tmp_path: Path) -> None:
    r = _resolver(tmp_path, limit=30, deadline=0.2)
    release = threading.Event()
    t0 = time.monotonic()
    try:
        with pytest.raises(nss.NssTimeout):
            r.ask(("pw", "y"), "getpwnam('y')", lambda: release.wait(60))
    finally:
        release.set()
    assert time.monotonic() - t0 < 10  # wall time: a deadline test (30 s without it)


def test_waiting_holds_no_lock(tmp_path: Path) -> None:
    """While one caller waits for a slow answer, another question is asked and answered,
    and a second caller of the slow one gets the same answer from the one lookup."""
    r = _resolver(tmp_path, limit=30)
    release = threading.Event()
    calls = []

    def slow() -> str:
        calls.append(1)
        release.wait(30)
        return "slow"

    got: list[str] = []
    waiters = [threading.Thread(target=lambda: got.append(r.ask(("s",), "s", slow)))
               for _ in range(2)]
    for w in waiters:
        w.start()
    assert r.ask(("f",), "f", lambda: "fast") == "fast"
    release.set()
    for w in waiters:
        w.join(30)
    assert got == ["slow", "slow"] and calls == [1]


def test_failures_of_a_lookup_are_host_errors(tmp_path: Path) -> None:
    r = _resolver(tmp_path)

    def boom() -> None:
        raise OSError("socket gone")

    with pytest.raises(HostError, match=r"NSS q: OSError: socket gone") as info:
        r.ask(("b",), "q", boom)
    assert not isinstance(info.value, nss.NssTimeout)  # it answered: NSS is not stuck
    assert r.stuck is None


def test_only_the_real_root_scanned_live_asks_nss(tmp_path: Path) -> None:
    assert nss.live(Host("/", live=True))
    assert not nss.live(Host("/", live=False))
    assert not nss.live(Host(str(tmp_path), live=True))
    assert users.lookup_accounts(Host("/", live=True)).db.nss is not None
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    acc = users.lookup_accounts(Host(str(tmp_path), live=True))
    assert acc.db.nss is None and acc.db.user("root") is not None


def test_lookups_on_this_machine_match_its_files() -> None:
    """Live, with this machine's own NSS: root as getent shows it."""
    acc = users.lookup_accounts(Host("/", live=True))
    root = acc.db.user("root")
    assert root is not None and (root.uid, root.gid) == (0, 0)
    assert acc.db.user("no-such-user-aiaudit") is None
    assert 0 in acc.db.supplementary_gids(root)
    g = acc.db.group_by_gid(0)
    assert g is not None and g.name == "root"
    users.require_user(Host("/", live=True), "root", "--user")
    with pytest.raises(UsageError, match=r"training user 'no-such-user-aiaudit' \(from "
                                         r"--user\) does not exist on this host"):
        users.require_user(Host("/", live=True), "no-such-user-aiaudit", "--user")
    # offline, or another root: the root's own programs would decide, not this machine
    users.require_user(Host("/", live=False), "no-such-user-aiaudit", "--user")


# ------------------------------------------------------------------ a real NSS module
PROBE = """
import json, sys
from aiaudit.core.errors import UsageError
from aiaudit.core.host import Host
from aiaudit.linux.accounts import users
host = Host("/", command_timeout=float(sys.argv[1]))
acc = users.lookup_accounts(host)
out = {}
u = acc.db.user("ldapuser")
out["user"] = [u.name, u.uid, u.gid, u.home, u.shell]
out["gids"] = sorted(acc.db.supplementary_gids(u))
out["gpu"] = list(acc.db.group("gpu").members)
out["by_gid"] = acc.db.group_by_gid(5003).name
out["missing"] = acc.db.user("nosuchuser")
try:
    users.require_user(host, "nosuchuser", "$SLURM_JOB_USER")
except UsageError as exc:
    out["usage"] = str(exc)
print(json.dumps(out))
"""


def test_directory_user_resolves_as_glibc_resolves_it(tmp_path: Path) -> None:
    """The resolver's answers for a user of an NSS module equal what ``id`` and
    ``getent`` (glibc) print in the same namespace."""
    ns.need_namespace()
    binds = ns.tree(tmp_path)
    probe = ns.run(binds, [sys.executable, "-c", PROBE, str(LIMIT)])
    assert probe.returncode == 0, probe.stderr
    got = json.loads(probe.stdout)
    ids = ns.run(binds, ["id", "-G", "ldapuser"])
    pw = ns.run(binds, ["getent", "passwd", "ldapuser"])
    assert ids.returncode == 0 and pw.returncode == 0, ids.stderr + pw.stderr
    name, _x, uid, gid, _gecos, home, shell = pw.stdout.strip().split(":")
    assert got["user"] == [name, int(uid), int(gid), home, shell]
    assert got["gids"] == sorted(int(g) for g in ids.stdout.split())
    assert got["gpu"] == ["ldapuser"] and got["by_gid"] == "hpc"
    assert got["missing"] is None
    assert got["usage"] == (
        "training user 'nosuchuser' (from $SLURM_JOB_USER) does not exist on this host: "
        "getpwnam finds no such user through NSS (passwd: files extrausers); name an "
        "existing account with --user NAME")


RULES = ("LIMITS-NOFILE-SOFT", "LIMITS-NOFILE-HARD", "LIMITS-MEMLOCK-SOFT",
         "LIMITS-MEMLOCK-HARD", "TRAINING-USER-NOT-ROOT", "TRAINING-USER-NO-ROOT-GROUPS",
         "TRAINING-USER-SUDO-PASSWORD")


def _scan(binds: dict[str, Path], *extra: str) -> tuple[subprocess.CompletedProcess[str],
                                                        float, float]:
    argv = [sys.executable, "-m", "aiaudit", "scan", "--ruleset", "dl-training", "--user",
            "ldapuser", "--format", "json", "--only", *RULES, *extra]
    t0 = time.monotonic()
    with CpuTime() as cpu:
        proc = ns.run(binds, argv)
    return proc, time.monotonic() - t0, cpu.seconds


@pytest.mark.parametrize("hung", ["passwd", "grouplist"])
def test_a_hung_directory_costs_one_timeout_and_errors_every_rule(tmp_path: Path,
                                                                  hung: str) -> None:
    """A source that never answers: ``getpwnam`` (the user's own lookup), or only
    ``getgrouplist`` (the group is in /etc/group, the user is not listed there, so
    pam_limits asks the sources' initgroups, and extrausers blocks).  Every training-user
    rule is an error naming the lookup; the scan ends after one lookup timeout, not one
    per rule, and is not frozen (``os.getgrouplist`` would hold the GIL while blocked)."""
    ns.need_namespace()
    if hung == "passwd":
        binds = ns.tree(tmp_path, fifo=("passwd",))
    else:
        binds = ns.tree(tmp_path, fifo=("group",), limits="@gpu - memlock unlimited\n",
                      etc_group="root:x:0:\ngpu:x:5002:\n")
    proc, took, cpu = _scan(binds)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr
    results = {r["rule_id"]: r for r in json.loads(proc.stdout)["results"]}
    what = "getpwnam('ldapuser')" if hung == "passwd" else "getgrouplist('ldapuser')"
    first = f"NSS did not answer {what} within 5 s"
    assert any(first in r["message"] for r in results.values()), results
    for rid in RULES:
        if hung == "grouplist" and rid == "TRAINING-USER-NOT-ROOT":
            assert results[rid]["status"] == "pass"  # the user itself was found
            continue
        assert results[rid]["status"] == "error", results[rid]
        assert "NSS did not answer" in results[rid]["message"], results[rid]
    # a deadline test, so wall time: one lookup timeout (5 s, Host.command_timeout) and
    # the scan's own work; generous for a loaded machine, far below seven timeouts (35 s)
    # or the 120 s this subprocess may take
    assert took < 5 + 25, took
    assert cpu < 5, cpu


def test_prolog_with_a_hung_directory_does_not_drain(tmp_path: Path) -> None:
    """Under --prolog (on-error pass), the hung lookup is a warning, not a drain, and the
    scan ends well within the prolog deadline (10 s)."""
    ns.need_namespace()
    proc, took, _cpu = _scan(ns.tree(tmp_path, fifo=("passwd",)), "--prolog")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("aiaudit: WARN not evaluated"), proc.stderr
    assert took < 10 + 20, took  # wall time: a deadline test (see above)


def test_directory_groups_decide_the_training_user_rules(tmp_path: Path) -> None:
    """Live, the directory's groups count: ``docker`` (only in the directory, listing the
    user) fails the root-equivalent-groups rule with the NSS lookup as evidence; sudo's
    ``%gpu`` (a directory group) rule gives the user NOPASSWD ALL."""
    ns.need_namespace()
    binds = ns.tree(tmp_path / "ns", group=ns.GROUP + "docker:x:5010:ldapuser\n")
    sudoers = tmp_path / "sudoers"
    sudoers.mkdir()
    (sudoers / "sudoers").write_text("root ALL=(ALL:ALL) ALL\n%gpu ALL=(ALL) NOPASSWD: ALL\n")
    (sudoers / "sudoers").chmod(0o440)
    if not Path("/etc/sudoers").exists():
        pytest.skip("needs /etc/sudoers (sudo) to bind the test's policy over it")
    binds["/etc/sudoers"] = sudoers / "sudoers"
    proc, _took, _cpu = _scan(binds)
    results = {r["rule_id"]: r for r in json.loads(proc.stdout)["results"]}
    groups = results["TRAINING-USER-NO-ROOT-GROUPS"]
    assert groups["status"] == "fail" and "ldapuser is in docker" in groups["message"]
    assert groups["evidence"][0]["source"] == ("getgrnam(docker) through NSS (group: "
                                               "files extrausers)")
    # gpasswd edits /etc/group only: a directory membership is removed in the directory
    assert not groups["remediation"].get("snippets")
    assert "comes from the directory (NSS)" in groups["remediation"]["summary"]
    assert results["TRAINING-USER-NOT-ROOT"]["status"] == "pass"
    sudo = results["TRAINING-USER-SUDO-PASSWORD"]
    assert sudo["status"] == "fail" and "(NOPASSWD)" in sudo["message"], sudo
    real = ns.run(binds, ["sudo", "-n", "-l", "-U", "ldapuser"])  # sudo itself agrees
    assert "(ALL) NOPASSWD: ALL" in real.stdout, real.stdout + real.stderr


CONFIGURED = """
import json
from tests.helpers import run_check
out = []
for users in (["ldapuser"], "*", ["nosuchuser"]):
    [r] = run_check("limits.configured", "/", {"item": "memlock", "type": "hard",
                    "min": 1024, "users": users}, live=True)
    out.append([r.status.value, r.message, r.data.get("values", {}),
                r.data.get("unknown")])
print(json.dumps(out))
"""


def test_limits_configured_decides_directory_users_and_groups(tmp_path: Path) -> None:
    """limits.configured live: a named directory user gets its directory group's line
    (``@gpu``); the '*' view decides every account's groups through NSS (none is
    "unknown"); a user NSS does not know is an error saying so."""
    ns.need_namespace()
    binds = ns.tree(tmp_path / "ns", limits="@gpu hard memlock 2048\n* hard memlock 64\n")
    probe = ns.run(binds, [sys.executable, "-c", CONFIGURED],
                   env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).parents[3])})
    assert probe.returncode == 0, probe.stderr
    named, star, missing = json.loads(probe.stdout)
    assert named[0] == "pass" and named[2] == {
        "ldapuser": "2048 (etc/security/limits.conf:1)"}, named
    assert star[0] == "fail" and star[3] == [], star  # every account decided, none unknown
    assert star[2]["any other user"] == "64 (etc/security/limits.conf:2)"
    assert missing[0] == "error" and missing[1].startswith(
        "nosuchuser does not exist on this host: NSS (passwd: files extrausers)"), missing


def test_cli_live_scan_of_an_unknown_user_is_a_usage_error() -> None:
    """`--user nosuchuser` on the live /: exit 2 and one message, not seven error
    results; offline (the root's own NSS would decide) the rules report it instead."""
    from tests.helpers import cli

    r = cli("scan", "--user", "no-such-user-aiaudit", "--only", "TRAINING-USER-NOT-ROOT")
    assert r.code == 2, r.out + r.err
    assert r.out == "" and r.err.count("\n") == 1
    assert r.err.startswith("aiaudit: error: training user 'no-such-user-aiaudit' (from "
                            "--user) does not exist on this host: getpwnam finds no such "
                            "user through NSS (passwd: ")
    off = cli("scan", "--offline", "--user", "no-such-user-aiaudit", "--format", "json",
              "--only", "TRAINING-USER-NOT-ROOT")
    assert off.code == 3, off.err
    assert json.loads(off.out)["results"][0]["status"] == "error"
