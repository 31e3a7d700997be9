"""Oracle: the effective limits the model computes equal what the REAL pam_limits module
(libpam-modules, Debian build) sets, over a generated corpus of configurations and users.

Needs root, ``unshare`` (mount + PID namespaces) and libpam; skipped locally without them,
a failure under CI (``CI`` set).  The driver runs as PID 1 of a new PID namespace so that its
limits are what the Debian build reads from ``/proc/1/limits``.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.oracle import pam_limits_corpus as corpus

DRIVER = Path(__file__).parents[2] / "oracle" / "pam_limits_driver.py"
MODULE = Path("/lib/x86_64-linux-gnu/security/pam_limits.so")
N_CASES = 400


def _need(ok: bool, why: str) -> None:
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"oracle unavailable under CI: {why}")
        pytest.skip(why)


def _cap_sys_resource() -> bool:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) & (1 << 24))
    return False


def _preflight() -> None:
    _need(os.geteuid() == 0, "needs root")
    _need(shutil.which("unshare") is not None, "needs unshare (util-linux)")
    _need(MODULE.exists(), f"needs {MODULE} (libpam-modules)")
    probe = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", "true"],
                           capture_output=True, text=True, timeout=30)
    _need(probe.returncode == 0, f"mount/PID namespaces not permitted: {probe.stderr.strip()}")


def _ceiling() -> dict[str, int]:
    out = {}
    for name, res in (("nofile", resource.RLIMIT_NOFILE), ("memlock", resource.RLIMIT_MEMLOCK)):
        hard = resource.getrlimit(res)[1]
        out[name] = -1 if hard == resource.RLIM_INFINITY else hard
    if out["nofile"] == -1 or out["nofile"] > 1048576:
        out["nofile"] = 1048576
    return out


def _run_driver(cases: list[dict]) -> list[dict]:
    proc = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", sys.executable,
                           str(DRIVER)], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.oracle
def test_model_matches_real_pam_limits(tmp_path: Path) -> None:
    _preflight()
    cases = corpus.generate(N_CASES, _ceiling())
    real = _run_driver(cases)
    nr_open = int(Path("/proc/sys/fs/nr_open").read_text())
    cap = _cap_sys_resource()
    diffs = []
    for case, got in zip(cases, real, strict=True):
        want = corpus.predict(case, tmp_path / f"c{case['id']}", cap_sys_resource=cap,
                              nr_open=nr_open)
        if got != want:
            diffs.append(f"case {case['id']} user={case['user']} args={case['args']!r}\n"
                         f"  files={json.dumps(case['files'])[:1500]}\n"
                         f"  pid1={case['pid1']} child={case['child']}\n"
                         f"  real={got}\n  model={want}")
    assert not diffs, f"{len(diffs)}/{len(cases)} differ:\n" + "\n".join(diffs[:8])


@pytest.mark.oracle
def test_pam_stack_walk_matches_libpam(tmp_path: Path) -> None:
    """Whether pam_limits runs for a service (includes, substack, comments, case, 'other',
    optional vs required failures) as libpam decides."""
    _preflight()
    cases = corpus.stack_cases(_ceiling())
    real = _run_driver(cases)
    diffs = []
    for case, got in zip(cases, real, strict=True):
        want = corpus.stack_predict(case, tmp_path / case["id"])
        if corpus.stack_outcome(got) != want:
            diffs.append(f"{case['id']}: real {corpus.stack_outcome(got)} ({got}), "
                         f"model {want}")
    assert not diffs, "\n".join(diffs)


CLAMP_CASES = [
    # (limits.conf, item, the line that asks for the higher soft value, the hard line)
    ("alice soft nofile 5000\nalice hard nofile 3000\n", "nofile", 1, 2),
    ("* hard nofile 2048\nalice soft nofile 4096\n", "nofile", 2, 1),
    ("alice - memlock 1024\nalice soft memlock 8192\n", "memlock", 2, 1),
]


@pytest.mark.oracle
def test_clamped_soft_names_the_hard_line(tmp_path: Path) -> None:
    """soft above hard: the real module clamps soft to hard; the model gives the same
    values and names the hard side's line as what decided the soft value."""
    _preflight()
    ceiling = _ceiling()
    cases = [{"id": i, "files": {"limits.conf": text}, "passwd": corpus.PASSWD,
              "group": corpus.GROUP, "user": "alice", "args": "",
              "pid1": {"nofile": [1024, ceiling["nofile"]],
                       "memlock": [65536, ceiling["memlock"]]},
              "child": {"nofile": [1000, ceiling["nofile"]],
                        "memlock": [32768, ceiling["memlock"]]}}
             for i, (text, *_r) in enumerate(CLAMP_CASES)]
    real = _run_driver(cases)
    from aiaudit.core.host import Host
    from aiaudit.linux.accounts import users
    from aiaudit.linux.pam_limits import conf as lp
    from aiaudit.linux.pam_limits.conf import subject_for
    from aiaudit.linux.pam_limits.files import PamBuild, limits_files

    for case, got, (_text, item, soft_ln, hard_ln) in zip(cases, real, CLAMP_CASES,
                                                           strict=True):
        assert got[item][0] == got[item][1], got  # clamped by the real module
        host = Host(str(corpus._root(tmp_path / f"k{case['id']}", case)), live=False)
        build = PamBuild(True, "1.5.2-6", (1, 5, 2), "oracle")
        files, _ = limits_files(host, build, None)
        acc = users.accounts(host)
        sides = {i: (lp.Side(v[0], lp.KERNEL), lp.Side(v[1], lp.KERNEL))
                 for i, v in case["pid1"].items()}
        dec = lp.decide(files, subject_for(acc, acc.db.user("alice")), sides,
                        lp.Variant(debian_root=True))
        soft, hard = dec.limits[item]
        assert (soft.value, hard.value) == tuple(got[item])
        assert soft.clamped and soft.line is hard.line and soft.line.line == hard_ln
        assert soft.clamped_line is not None and soft.clamped_line.line == soft_ln


# ------------------------------------------------------------------ directory users (NSS)
EXTRAUSERS = ("/usr/lib/libnss_extrausers.so.2",
              "/usr/lib/x86_64-linux-gnu/libnss_extrausers.so.2")
TRAINING_USER_RULES = ("TRAINING-USER-NOT-ROOT", "TRAINING-USER-NO-ROOT-GROUPS",
                       "TRAINING-USER-SUDO-PASSWORD")
N_NSS_CASES = 24


def _nss_preflight() -> None:
    _preflight()
    _need(any(Path(p).exists() for p in EXTRAUSERS),
          "needs libnss-extrausers (an NSS source for directory users)")
    for target in ("/etc/nsswitch.conf", "/var/lib/extrausers", "/etc/ssh"):
        _need(Path(target).exists(), f"needs {target} to bind the test's own over it")


def _scan_argv(user: str) -> list[str]:
    return [sys.executable, "-m", "aiaudit", "scan", "--ruleset", "dl-training", "--user",
            user, "--format", "json", "--only", *corpus.LIMIT_RULES, *TRAINING_USER_RULES]


@pytest.mark.oracle
def test_live_scan_of_directory_user_matches_real_pam_limits() -> None:
    """A user that exists only through an NSS module (libnss-extrausers, as sssd/LDAP users
    do; the machine's files, nsswitch.conf and /etc/security replaced in a private mount
    namespace): the real pam_limits opens an sshd session for it, and a live aiaudit scan of
    the same ``/`` evaluates every shipped limits rule for that user, through NSS, to the
    values the real session got (groups from the directory, the files and getgrouplist;
    gid and uid ranges; no-limits lines).  The training-user rules are evaluated too:
    none skips."""
    _nss_preflight()
    nr_open = int(Path("/proc/sys/fs/nr_open").read_text())
    ceiling = _ceiling()
    cases = corpus.nss_cases(N_NSS_CASES, ceiling, can_raise=_cap_sys_resource(),
                             nr_open=nr_open)
    for case in cases:
        case["scan"] = _scan_argv(case["user"])
    real = _run_driver(cases)
    diffs = []
    for case, got in zip(cases, real, strict=True):
        assert got["open"] == 0, got
        model = corpus.scan_limits(got["scan"])
        session = {rid: got[item][idx] for rid, (item, idx) in corpus.LIMIT_RULES.items()}
        if model["nolimits"]:  # the real session kept what its process had
            session_kept = all(got[i] == case["child"][i] for i in ("nofile", "memlock"))
            if not session_kept:
                diffs.append(f"{case['id']}: model says no limits, real {got}")
            continue
        wrong = {rid: (session[rid], model.get(rid)) for rid in session
                 if model.get(rid) != session[rid]}
        if wrong:
            diffs.append(f"{case['id']} user={case['user']} files={case['files']}\n"
                         f"  real/model={wrong}\n  scan rc={got['scan']['rc']} "
                         f"{got['scan']['err'][-500:]}")
        for rid in (*corpus.LIMIT_RULES, *TRAINING_USER_RULES):
            assert model[f"{rid}:status"] in ("pass", "fail"), (rid, model[f"{rid}:message"])
    assert not diffs, f"{len(diffs)}/{len(cases)} differ:\n" + "\n".join(diffs[:6])
    # the user was found through NSS, with the lookup as evidence (not a files line)
    first = json.loads(real[0]["scan"]["out"])
    not_root = next(r for r in first["results"] if r["rule_id"] == "TRAINING-USER-NOT-ROOT")
    assert not_root["evidence"][0]["source"] == (
        f"getpwnam({cases[0]['user']}) through NSS (passwd: files extrausers)")
