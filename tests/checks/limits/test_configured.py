"""``limits.configured``: every pam_limits item, min and max, the ``*`` view over every
account; against the real pam_limits.so where it can run (tests/oracle)."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from aiaudit.checks.limits.configured import SCHEMA

from aiaudit.core.model import Status
from tests.helpers import run_check
from tests.linux.pam_limits.test_oracle import _cap_sys_resource

PASSWD = ("root:x:0:0::/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n"
          "bob:x:1001:1001::/home/bob:/bin/bash\ncarol:x:1002:1002::/home/carol:/bin/bash\n")
GROUP = "root:x:0:\nalice:x:1000:\nbob:x:1001:\ncarol:x:1002:\ndev:x:2000:bob\n"
CHECK = "limits.configured"


def root_with(make_root, conf: str, extra: dict[str, str] | None = None) -> Path:
    return make_root({"/etc/passwd": PASSWD, "/etc/group": GROUP,
                      "/etc/os-release": "ID=debian\n",
                      "/etc/security/limits.conf": conf, **(extra or {})})


def check(root: Path, **params):
    jsonschema.Draft202012Validator(SCHEMA).validate(params)
    return run_check(CHECK, root, params)


def test_star_hard_core_zero_for_every_user(make_root) -> None:
    [r] = check(root_with(make_root, "* hard core 0\n"), item="core", type="hard", max=0)
    assert r.status is Status.PASS
    assert r.data["values"] == {"alice": "0 (etc/security/limits.conf:1)",
                                "bob": "0 (etc/security/limits.conf:1)",
                                "carol": "0 (etc/security/limits.conf:1)",
                                "any other user": "0 (etc/security/limits.conf:1)"}


def test_a_group_line_beats_star(make_root) -> None:
    root = root_with(make_root, "* hard core 0\n",
                     {"/etc/security/limits.d/50-dev.conf": "@dev hard core unlimited\n"})
    [r] = check(root, item="core", type="hard", max=0)
    assert r.status is Status.FAIL
    assert "bob unlimited (etc/security/limits.d/50-dev.conf:1)" in r.message
    assert r.evidence[0].source == "etc/security/limits.d/50-dev.conf:1"
    # the fix writes where it wins: a '*' line never beats '@dev', a later '@dev' line does
    snip = r.remediation.snippets[0]
    assert snip.content == "* hard core 0\n@dev hard core 0\n"
    assert snip.path == "/etc/security/limits.d/zz-aiaudit-policy.conf"
    # the '*' line the @dev line overrode is named, with why it lost
    over = [e for e in r.evidence if e.source == "etc/security/limits.conf:1"]
    assert over and over[0].value == ("* hard core 0 (overridden: etc/security/limits.d/50-dev"
                                    ".conf:1 is a group line: it beats a '*' line wherever "
                                    "that is read)")
    assert r.data["overridden"][0]["overridden_by"] == "etc/security/limits.d/50-dev.conf:1"


def test_unset_fails_unless_allowed(make_root) -> None:
    root = root_with(make_root, "alice hard core 0\n")
    [r] = check(root, item="core", type="hard", max=0)
    assert r.status is Status.FAIL and "bob not set" in r.message
    [ok] = check(root, item="core", type="hard", max=0, users=["alice"])
    assert ok.status is Status.PASS
    [lax] = check(root, item="core", type="hard", max=0, unset="pass")
    assert lax.status is Status.PASS


@pytest.mark.parametrize("conf,params,want", [
    ("* soft nproc 4096\n* hard nproc 8192\n", {"item": "nproc", "type": "hard", "min": 1024,
                                                "max": 8192}, "pass"),
    ("* hard nproc unlimited\n", {"item": "nproc", "type": "hard", "max": 65536}, "fail"),
    ("* hard nproc unlimited\n", {"item": "nproc", "type": "hard", "min": "unlimited"},
     "pass"),
    ("* - maxlogins 10\n", {"item": "maxlogins", "type": "hard", "min": 1, "max": 10}, "pass"),
    ("* - maxlogins 11\n", {"item": "maxlogins", "type": "soft", "max": 10}, "fail"),
    ("* hard stack 8192\n", {"item": "stack", "type": "hard", "max": 8192}, "pass"),  # KiB
    ("* hard as 4194304\n", {"item": "as", "type": "hard", "op": "eq", "value": 4194304},
     "pass"),
    # pam_limits reads numbers with strtoul: "4G" is 4 KiB, not 4 GiB
    ("* hard as 4G\n", {"item": "as", "type": "hard", "min": 4194304}, "fail"),
    ("* hard rtprio 0\n", {"item": "rtprio", "type": "hard", "max": 0}, "pass"),
    ("* hard rtprio 99\n", {"item": "rtprio", "type": "hard", "max": 0}, "fail"),
    # soft clamps to hard, as pam_limits does
    ("* soft core 1000\n* hard core 10\n", {"item": "core", "type": "soft", "max": 10}, "pass"),
])
def test_items_and_ranges(make_root, conf: str, params, want: str) -> None:
    [r] = check(root_with(make_root, conf), **params)
    assert r.status.value == want, r.message


def test_root_is_not_matched_by_star_on_debian(make_root) -> None:
    root = root_with(make_root, "* hard core 0\n")
    [r] = check(root, item="core", type="hard", max=0, include_root=True)
    assert r.status is Status.FAIL and "root not set" in r.message
    [ok] = check(root_with(make_root, "* hard core 0\nroot hard core 0\n"), item="core",
                 type="hard", max=0, include_root=True)
    assert ok.status is Status.PASS


@pytest.mark.parametrize("bad", [
    {"item": "cores", "type": "hard", "max": 0},
    {"item": "core", "type": "hard"},                    # nothing asked
    {"item": "core", "type": "hard", "max": "lots"},
    {"item": "core", "type": "both", "max": 0},
    {"item": "core", "type": "hard", "max": 0, "users": []},
])
def test_schema_refuses(bad) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(SCHEMA).validate(bad)


# ------------------------------------------------------------------ against pam_limits.so
DRIVER = Path(__file__).parents[2] / "oracle" / "pam_limits_driver.py"
MODULE = Path("/lib/x86_64-linux-gnu/security/pam_limits.so")
ORACLE_CONFS = [
    "* hard core 0\n",
    "* hard core 0\n@dev hard core unlimited\n",
    "* hard core 0\nalice hard core 100\n1001: hard core 7\n",
    "* - core 0\n@dev soft core 5\nroot hard core 0\n",
    "alice hard core 3\n",
    "* hard nproc 500\n@dev hard nproc 900\n",
]


@pytest.mark.oracle
def test_values_match_real_pam_limits(make_root) -> None:
    """Each account's value (or "not set": the session keeps PID 1's) is what the real
    module leaves in the session (Debian PAM: unset items come from /proc/1/limits)."""
    why = None
    if os.geteuid() != 0:
        why = "needs root"
    elif not MODULE.exists() or shutil.which("unshare") is None:
        why = "needs libpam-modules and unshare"
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    pid1 = {"core": [0, 12345 * 1024], "nproc": [400, 4000]}
    cases, expect = [], []
    for conf in ORACLE_CONFS:
        root = root_with(make_root, conf, {"/var/lib/dpkg/status": ""})
        for item in ("core", "nproc"):
            [r] = run_check(CHECK, root, {"item": item, "type": "hard", "min": 0,
                                          "include_root": True})
            for user, value in r.data["values"].items():
                if user == "any other user":
                    continue
                cases.append({"files": {"limits.conf": conf}, "passwd": PASSWD,
                              "group": GROUP, "user": user, "pid1": pid1,
                              "items": [item]})
                expect.append((conf, user, item, value.split(" ")[0]))
    proc = subprocess.run(["unshare", "-m", "-p", "-f", "--mount-proc", sys.executable,
                           str(DRIVER)], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cap = _cap_sys_resource()
    diffs = []
    for (conf, user, item, ours), real in zip(expect, json.loads(proc.stdout), strict=True):
        hard = real[item][1]
        unit = 1024 if item == "core" else 1
        want = math.inf if ours == "unlimited" else None if ours == "not" else int(ours) * unit
        if ours == "not" or (want > pid1[item][1] and not cap):
            # not set: the session keeps PID 1's value; without CAP_SYS_RESOURCE (a
            # container) setrlimit cannot raise the hard limit, and Debian's module
            # ignores the failure
            ok = hard == pid1[item][1]
        else:
            got = "unlimited" if hard == -1 else str(hard // 1024 if item == "core" else hard)
            ok = got == ours
        if not ok or real.get("open") != 0:
            diffs.append(f"{conf!r} {user} {item}: ours {ours}, real {real}")
    assert not diffs, "\n".join(diffs)


def test_missing_passwd_error_says_what_was_looked_for(make_root) -> None:
    [r] = check(make_root({"/etc/os-release": "ID=debian\n"}), item="core", type="hard", max=0)
    assert r.status is Status.ERROR and "etc/passwd is missing" in r.message
    assert [(e.kind, e.source, e.value) for e in r.evidence] == [
        ("default", "accounts: etc/passwd", "no such file")]


def test_nothing_sets_it_names_the_files_read_and_the_default(make_root) -> None:
    root = root_with(make_root, "# nothing\n",
                     {"/etc/security/limits.d/10-nofile.conf": "* hard nofile 65536\n",
                      "/etc/security/limits.d/20-x.conf": "bob -\n"})
    [r] = check(root, item="core", type="hard", max=0)
    assert r.status is Status.FAIL and "alice not set" in r.message
    files = [(e.source, e.value) for e in r.evidence if e.kind == "file"]
    # bob's '<domain> -' line decides his, then every file that was read
    assert files[0] == ("etc/security/limits.d/20-x.conf:1", "bob -")
    assert [s for s, _ in files[1:]] == ["etc/security/limits.conf",
                                        "etc/security/limits.d/10-nofile.conf",
                                        "etc/security/limits.d/20-x.conf"]
    assert "no line sets hard core for alice, bob, carol, any other user" in files[1][1]
    [d] = [e for e in r.evidence if e.kind == "default"]
    assert d.source == "pam_limits files: etc/security/limits.conf, etc/security/limits.d/*.conf"
    assert d.value.startswith("3 read, no line sets hard core")
    assert "PID 1's limit" in d.value  # Debian PAM before 1.7 starts from /proc/1/limits


def test_unset_on_upstream_pam_keeps_the_services_limit(make_root) -> None:
    root = make_root({"/etc/passwd": PASSWD, "/etc/group": GROUP,
                      "/etc/os-release": "ID=rocky\n"})
    [r] = check(root, item="core", type="hard", max=0)
    assert r.status is Status.FAIL
    # no limits.conf (upstream >= 1.5.3 reads on without it): nothing to point a file at
    assert all(e.kind == "default" for e in r.evidence)
    [d] = r.evidence
    assert "usr/lib/security/limits.conf" in d.source and "usr/lib/security/limits.d/*.conf" \
        in d.source
    assert d.value.startswith("0 read") and "the login service starts with" in d.value


def test_refused_sessions_name_the_missing_file_and_the_pam_build(make_root) -> None:
    root = make_root({"/etc/passwd": PASSWD, "/etc/group": GROUP,
                      "/etc/os-release": "ID=debian\nVERSION_ID=\"12\"\n"})
    [r] = check(root, item="core", type="hard", max=0)
    assert r.status is Status.FAIL and "refuses every session" in r.message
    missing, build = r.evidence
    assert (missing.kind, missing.source) == ("default", "etc/security/limits.conf")
    assert "no such file" in missing.value
    assert (build.kind, build.source) == ("default", "pam_limits build")
    assert "1.5.2" in build.value


def test_refused_by_a_dangling_limits_d_link_points_at_the_link(make_root) -> None:
    root = make_root({"/etc/passwd": PASSWD, "/etc/group": GROUP,
                      "/etc/os-release": "ID=debian\n", "/etc/security/limits.conf": ""},
                     {"/etc/security/limits.d/50-gone.conf": "/nowhere.conf"})
    [r] = check(root, item="core", type="hard", max=0)
    assert r.status is Status.FAIL and "refuses every session" in r.message
    assert r.evidence[0].kind == "file"
    assert r.evidence[0].path == "/etc/security/limits.d/50-gone.conf"
    assert "dangling" in r.evidence[0].value


def test_undecidable_group_names_the_line_and_the_group_sources(make_root) -> None:
    root = root_with(make_root, "@dev hard core 0\n* hard core 0\n",
                     {"/etc/nsswitch.conf": "passwd: files\ngroup: files sss\n"})
    [r] = check(root, item="core", type="hard", max=0)
    assert r.status is Status.ERROR and "group membership" in r.message
    line, ns = r.evidence
    assert (line.kind, line.source, line.value) == ("file", "etc/security/limits.conf:1",
                                                    "@dev hard core 0")
    assert (ns.kind, ns.path) == ("file", "/etc/nsswitch.conf") and "sss" in ns.value


def test_unreadable_accounts_error_names_the_account_files(make_root) -> None:
    root = make_root({"/etc/passwd": b"root:x:0:0\x00\x01\x02::/:/bin/sh\n",
                      "/etc/os-release": "ID=debian\n"})
    [r] = check(root, item="core", type="hard", max=0)
    assert r.status is Status.ERROR
    [e] = r.evidence
    assert (e.kind, e.source) == ("default", "accounts: etc/passwd, etc/group")
    assert e.value.startswith("cannot be read: ")


def test_named_user_the_files_lack_is_could_not_look_with_directory_sources(make_root
                                                                           ) -> None:
    """Offline, a named user that is not in etc/passwd: an error either way; with NSS
    sources beyond the files it says those would decide (never a silent skip)."""
    plain = root_with(make_root, "* hard core 0\n")
    [r] = check(plain, item="core", type="hard", max=0, users=["ldapuser"])
    assert (r.status, r.message) == (Status.ERROR, "ldapuser is not in etc/passwd")
    sss = root_with(make_root, "* hard core 0\n",
                    {"/etc/nsswitch.conf": "passwd: files sss\ngroup: files sss\n"})
    [r] = check(sss, item="core", type="hard", max=0, users=["ldapuser"])
    assert r.status is Status.ERROR
    assert r.message.startswith("could not look: ldapuser is not in etc/passwd, and NSS "
                                "sources beyond the files (sss) would decide")
    assert [(e.source, e.value) for e in r.evidence] == [("etc/nsswitch.conf:1",
                                                          "passwd: files sss")]
