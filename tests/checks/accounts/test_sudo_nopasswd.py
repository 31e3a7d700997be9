"""``accounts.sudo_nopasswd``: sudo's NOPASSWD decision, compared with the real sudo: in a
private mount namespace the case's sudoers, passwd, group and shadow are bind-mounted over
/etc and ``sudo -n /bin/true`` is run as the training user (``setpriv``); it succeeds
exactly when sudo lets the user run an arbitrary command as root without a password."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from aiaudit.core.model import Status
from tests.helpers import build_root, run_check

PASSWD = "root:x:0:0::/root:/bin/sh\ntrainer:x:1001:1001::/tmp:/bin/sh\n"
GROUP = "root:x:0:\nsudo:x:27:trainer\ntrainer:x:1001:\nwheel:x:10:\n"
HEAD = "Defaults !mail_no_user,!lecture\nroot ALL=(ALL:ALL) ALL\n"

CASES: dict[str, tuple[dict[str, str], bool]] = {
    "includedir-nopasswd": ({"/etc/sudoers": HEAD + "@includedir /etc/sudoers.d\n",
                             "/etc/sudoers.d/90-cloud": "trainer ALL=(ALL) NOPASSWD:ALL\n"},
                            True),
    "later-passwd-wins": ({"/etc/sudoers": HEAD + "#includedir /etc/sudoers.d\n"
                                                  "trainer ALL=(ALL) ALL\n",
                           "/etc/sudoers.d/90-cloud": "trainer ALL=(ALL) NOPASSWD:ALL\n"},
                          False),
    "nopasswd-one-command": ({"/etc/sudoers": HEAD + "trainer ALL=(ALL) NOPASSWD: "
                                                     "/usr/bin/nvidia-smi, PASSWD: ALL\n"},
                             False),
    "group-nopasswd": ({"/etc/sudoers": HEAD + "%sudo ALL=(ALL:ALL) NOPASSWD: ALL\n"}, True),
    "user-alias": ({"/etc/sudoers": HEAD + "User_Alias TRAIN = alice, trainer\n"
                                           "TRAIN ALL = (root) NOPASSWD: ALL\n"}, True),
    "cmnd-alias-all": ({"/etc/sudoers": HEAD + "Cmnd_Alias EVERYTHING = ALL\n"
                                               "trainer ALL = NOPASSWD: EVERYTHING\n"}, True),
    "no-authenticate": ({"/etc/sudoers": HEAD + "Defaults:trainer !authenticate\n"
                                                "trainer ALL=(ALL) ALL\n"}, True),
    "authenticate-again": ({"/etc/sudoers": HEAD + "Defaults !authenticate\n"
                                                   "Defaults:trainer authenticate\n"
                                                   "trainer ALL=(ALL) ALL\n"}, False),
    "negated-user": ({"/etc/sudoers": HEAD + "ALL, !trainer ALL=(ALL) NOPASSWD: ALL\n"},
                     False),
    "dotted-file-skipped": ({"/etc/sudoers": HEAD + "@includedir /etc/sudoers.d\n",
                             "/etc/sudoers.d/90.conf": "trainer ALL=(ALL) NOPASSWD:ALL\n"},
                            False),
    "runas-nobody": ({"/etc/sudoers": HEAD + "trainer ALL=(nobody) NOPASSWD: ALL\n"}, False),
    "negated-command-still-all": ({"/etc/sudoers": HEAD + "trainer ALL=(ALL) NOPASSWD: ALL, "
                                                          "!/bin/su\n"}, True),
    "uid": ({"/etc/sudoers": HEAD + "#1001 ALL=(ALL) NOPASSWD: ALL\n"}, True),
    "other-host": ({"/etc/sudoers": HEAD + "trainer not-this-host = (ALL) NOPASSWD: ALL\n"},
                   False),
    "denied-last": ({"/etc/sudoers": HEAD + "trainer ALL=(ALL) NOPASSWD: ALL\n"
                                            "trainer ALL=(ALL) !ALL\n"}, False),
    "continuation-and-tags": ({"/etc/sudoers": HEAD + "trainer ALL = (ALL) NOEXEC: \\\n"
                                                      "  SETENV: NOPASSWD: ALL\n"}, True),
    "not-listed": ({"/etc/sudoers": HEAD}, False),
}


def root_for(base: Path, files: dict[str, str]) -> Path:
    return build_root(base, {"/etc/passwd": PASSWD, "/etc/group": GROUP,
                             "/etc/shadow": "trainer:*:19000:0:99999:7:::\n",
                             "/etc/hostname": socket.gethostname() + "\n", **files},
                      dirs=("/etc/sudoers.d", "/run/sudo"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_decision(tmp_path: Path, name: str) -> None:
    files, nopasswd = CASES[name]
    [r] = run_check("accounts.sudo_nopasswd", root_for(tmp_path, files), user="trainer")
    assert r.status is (Status.FAIL if nopasswd else Status.PASS), r.message


def _real_sudo(root: Path) -> bool:
    """Does the real sudo run /bin/true as root for trainer without a password?"""
    for p in (root / "etc/sudoers", *(root / "etc/sudoers.d").iterdir()):
        p.chmod(0o440)
    (root / "etc/shadow").chmod(0o640)
    mounts = "; ".join(f"mount --bind {root}/etc/{f} /etc/{f}"
                       for f in ("sudoers", "sudoers.d", "passwd", "group", "shadow"))
    script = (f"set -e; {mounts}; mount --bind {root}/run/sudo /run/sudo; "
              "exec setpriv --reuid=1001 --regid=1001 --init-groups sudo -n /bin/true")
    res = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                         text=True, timeout=30, check=False)
    if res.returncode not in (0, 1) or "mount" in res.stderr:
        raise AssertionError(res.stderr)
    return res.returncode == 0


@pytest.mark.slow
def test_against_real_sudo(tmp_path: Path) -> None:
    missing = [p for p in ("sudo", "unshare", "setpriv") if shutil.which(p) is None]
    why = "needs root" if os.geteuid() != 0 else (f"needs {', '.join(missing)}" if missing
                                                  else None)
    if why is None and not Path("/etc/sudoers.d").is_dir():
        why = "needs /etc/sudoers.d (the sudo package)"
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"{why}: CI must run this test")
        pytest.skip(why)
    wrong = []
    for name, (files, nopasswd) in sorted(CASES.items()):
        root = root_for(tmp_path / name, files)
        real = _real_sudo(root)
        [r] = run_check("accounts.sudo_nopasswd", root, user="trainer")
        ours = r.status is Status.FAIL
        if real != ours or real != nopasswd:
            wrong.append(f"{name}: sudo {real}, aiaudit {ours}, expected {nopasswd}")
    assert not wrong, "\n".join(wrong)


def test_includes_relative_and_missing(make_root) -> None:
    files = {"/etc/passwd": PASSWD, "/etc/group": GROUP,
             "/etc/sudoers": HEAD + "@include sudoers.local\n",
             "/etc/sudoers.local": "trainer ALL=(ALL) NOPASSWD: ALL\n"}
    [r] = run_check("accounts.sudo_nopasswd", make_root(files), user="trainer")
    assert r.status is Status.FAIL and "sudoers.local:1" in r.message
    files["/etc/sudoers"] = HEAD + "@include /etc/nope\n"
    [r] = run_check("accounts.sudo_nopasswd", make_root(files), user="trainer")
    assert r.status is Status.ERROR and "does not exist" in r.message


def test_include_loop_is_bounded(make_root) -> None:
    files = {"/etc/passwd": PASSWD, "/etc/group": GROUP, "/etc/sudoers": "@include /etc/sudoers\n"}
    [r] = run_check("accounts.sudo_nopasswd", make_root(files), user="trainer")
    assert r.status is Status.ERROR and "deeper than 128" in r.message


def test_syntax_error_is_error(make_root) -> None:
    files = {"/etc/passwd": PASSWD, "/etc/group": GROUP, "/etc/sudoers": "trainer ALL\n"}
    [r] = run_check("accounts.sudo_nopasswd", make_root(files), user="trainer")
    assert r.status is Status.ERROR and "etc/sudoers:1" in r.message


def test_no_sudo_and_no_user(make_root) -> None:
    root = make_root({"/etc/passwd": PASSWD, "/etc/group": GROUP})
    [r] = run_check("accounts.sudo_nopasswd", root, user="trainer")
    assert r.status is Status.PASS
    [r] = run_check("accounts.sudo_nopasswd", root)
    assert r.status is Status.SKIP
