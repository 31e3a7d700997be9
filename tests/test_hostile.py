"""Hostile and broken host trees: the scan finishes, never hangs, never crashes, reads
nothing outside the root, and gives error or skip results only for the rules concerned.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.helpers import CpuTime, build_root

AIAUDIT = [sys.executable, "-m", "aiaudit"]
IS_ROOT = os.geteuid() == 0


def hostile_root(base: Path, outside: Path) -> Path:
    """A root full of traps.  ``outside`` is a directory next to it holding a FIFO that
    the scan would block on if it ever followed a link out of the root."""
    outside.mkdir()
    os.mkfifo(outside / "trap")
    root = build_root(base, {
        "/etc/os-release": 'ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian 12"\n',
        "/etc/hostname": "hostile\n",
        "/etc/passwd": "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n",
        "/etc/group": "root:x:0:\nalice:x:1000:\n",
        # binary and non-UTF-8 configuration files
        "/etc/sysctl.d/10-binary.conf": b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4,
        "/usr/lib/sysctl.d/20-latin1.conf": "vm.max_map_count = 262144\n# caf\xe9\n".encode(
            "latin-1"),
        # empty files everywhere a config is expected
        "/etc/security/limits.conf": "",
        "/etc/ssh/sshd_config.d/empty.conf": "",
        "/etc/default/grub": "",
        # sshd Include loops (self and mutual) and deep nesting
        "/etc/ssh/sshd_config": "Include /etc/ssh/sshd_config\nInclude /etc/ssh/a.conf\n"
                                "PasswordAuthentication no\n",
        "/etc/ssh/a.conf": "Include /etc/ssh/b.conf\n",
        "/etc/ssh/b.conf": "Include /etc/ssh/a.conf\n",
        # a NUL byte inside a path that a config file names: no such file, never a crash
        "/etc/ssh/sshd_config.d/20-nul.conf": "Include /etc/ssh/nul\x00.conf\n",
        "/etc/pam.d/sshd": "session required pam_limits.so conf=/etc/lim\x00its.conf\n"
                           "@include common-\x00session\n",
        "/etc/sysctl.d/80-nul\x01.conf": "vm.swappiness = 10\n",
        # live state with garbage in it
        "/proc/sys/vm/swappiness": "\x00\x01garbage\n",
        "/proc/sys/vm/max_map_count": "262144\n",
        "/proc/net/tcp": "not a table\n\x00\xff",
        "/proc/cmdline": "BOOT_IMAGE=/vmlinuz \x00 ro\n",
        "/proc/1/limits": "",
    }, links={
        # symlinks that loop, or lead outside the root (relative and absolute)
        "/etc/sysctl.d/30-loop.conf": "30-loop.conf",
        "/etc/sysctl.d/31-loop-a.conf": "31-loop-b.conf",
        "/etc/sysctl.d/31-loop-b.conf": "31-loop-a.conf",
        "/etc/sysctl.d/40-escape.conf": "../../../" + "../" * 12 + str(outside / "trap"),
        "/etc/security/limits.d/90-escape.conf": str(outside / "trap"),
        "/etc/security/limits.d/91-loop.conf": "91-loop.conf",
    })
    # FIFOs where configuration files are expected: opening one would block forever
    os.mkfifo(root / "etc/sysctl.d/50-fifo.conf")
    os.mkfifo(root / "etc/ssh/sshd_config.d/10-fifo.conf")
    os.mkfifo(root / "etc/fstab")
    if IS_ROOT:  # device nodes: /dev/zero would feed an endless read
        os.mknod(root / "etc/sysctl.conf", stat.S_IFCHR | 0o644, os.makedev(1, 5))
        os.mknod(root / "etc/security/limits.d/50-zero.conf", stat.S_IFCHR | 0o644,
                 os.makedev(1, 5))
    # a 100 MB sysctl.d file (sparse: costs no disk)
    with open(root / "etc/sysctl.d/60-huge.conf", "wb") as fh:
        fh.truncate(100 * 1024 * 1024)
    # an unreadable file (only meaningful when the scan runs as an unprivileged user)
    unreadable = root / "etc/sysctl.d/70-secret.conf"
    unreadable.write_text("vm.swappiness = 1\n")
    unreadable.chmod(0)
    return root


def scan(root: Path, *extra: str, deadline: float = 30) -> tuple[int, dict, float, float, str]:
    """(exit code, report, wall seconds, CPU seconds of the scan process, stderr) of a scan
    with a ``--timeout`` of ``deadline`` seconds (killed 30 s after it)."""
    t0 = time.monotonic()
    with CpuTime() as cpu:
        proc = subprocess.run([*AIAUDIT, "scan", "--root", str(root), "--format", "json",
                               "--timeout", f"{deadline:g}", *extra],
                              capture_output=True, text=True, timeout=deadline + 30)
    took = time.monotonic() - t0
    assert proc.returncode in (0, 1, 3), proc.stderr
    return proc.returncode, json.loads(proc.stdout), took, cpu.seconds, proc.stderr


@pytest.mark.parametrize("mode", ["--offline", "--live"])
def test_hostile_tree(tmp_path: Path, mode: str) -> None:
    root = hostile_root(tmp_path / "root", tmp_path / "outside")
    _code, report, took, cpu, err = scan(root, mode)
    # the 100 MB file and the endless device nodes cost CPU if they are read past the cap
    assert cpu < 30, f"the scan took {cpu:.1f} s of CPU"
    # a deadline test too, so wall time: the FIFO traps block without using CPU, and the
    # scan must end by its 30 s --timeout; generous for a loaded machine, below the 60 s
    # at which the test kills it
    assert took < 50, f"the scan took {took:.1f} s"
    assert "Traceback" not in err
    results = report["results"]
    assert results, "no results"
    messages = [r["message"] for r in results]
    assert not [m for m in messages if "internal error" in m], messages
    # a rule caught on a trap would be cut off at its rule timeout or the deadline: none is
    assert not [m for m in messages if "not evaluated" in m], messages
    statuses = {r["status"] for r in results}
    assert "error" in statuses, "broken files must give error results"
    assert statuses & {"pass", "fail"}, "the rest of the scan must still decide"
    # the sysctl persisted side is unknowable (100 MB file) -> error, never a guess
    by_rule = {r["rule_id"]: r for r in results}
    assert by_rule["SYSCTL-VM-MAX-MAP-COUNT"]["status"] == "error"
    assert "60-huge.conf" in by_rule["SYSCTL-VM-MAX-MAP-COUNT"]["message"]


@pytest.fixture
def world_traversable_tmp():
    """A temp dir an unprivileged user can reach (pytest's tmp_path is 0700)."""
    d = Path(tempfile.mkdtemp(prefix="aiaudit-unpriv-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_unreadable_file_as_unprivileged_user(world_traversable_tmp: Path) -> None:
    if not IS_ROOT:
        pytest.skip("needs root to switch to an unprivileged user")
    root = build_root(world_traversable_tmp / "root", {
        "/etc/sysctl.d/10-ok.conf": "vm.max_map_count = 262144\n",
        "/etc/sysctl.d/20-secret.conf": "vm.swappiness = 1\n",
    })
    for d, _, files in os.walk(root):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    (root / "etc/sysctl.d/20-secret.conf").chmod(0)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           *AIAUDIT, "scan", "--root", str(root), "--format", "json",
                           "--only", "SYSCTL-VM-MAX-MAP-COUNT"],
                          capture_output=True, text=True, timeout=60, env=env,
                          cwd="/")
    if "No module named" in proc.stderr:
        pytest.skip("the project is not readable by the unprivileged user here")
    assert proc.returncode == 3, proc.stderr
    res = json.loads(proc.stdout)["results"][0]
    assert res["status"] == "error"
    assert "20-secret.conf" in res["message"] and "Permission denied" in res["message"]


REPETITIVE_FILES = [
    "etc/sysctl.conf", "etc/sysctl.d/99-x.conf", "etc/security/limits.conf",
    "etc/security/limits.d/9.conf", "etc/ssh/sshd_config", "etc/pam.d/sshd",
    "etc/pam.d/common-session", "etc/default/grub", "etc/udev/rules.d/60-x.rules", "etc/fstab",
    "etc/slurm/slurm.conf", "etc/os-release", "var/lib/dpkg/status", "etc/tuned/active_profile",
    "etc/systemd/system/x.service", "etc/systemd/system.conf",
    "etc/firewalld/zones/public.xml", "etc/default/ufw", "etc/nftables.conf", "etc/passwd",
    "etc/group", "etc/hostname", "boot/grub/grub.cfg", "proc/cmdline", "proc/meminfo",
    "proc/mounts", "proc/net/tcp", "proc/sys/vm/swappiness",
    "sys/kernel/mm/transparent_hugepage/enabled", "usr/local/cuda/version.json",
]


@pytest.mark.parametrize("unit", ["a=b ", "a b ", "Include a\n"])
def test_megabyte_of_one_token_in_every_config_file(tmp_path: Path, unit: str) -> None:
    """1 MiB of one repeated token in every file a rule reads: every rule still decides,
    and the whole scan costs little CPU (quadratic work once made a rule take 17 s, a tuned
    active_profile of 262,144 words took minutes).  The wall-clock budgets (rule timeout,
    scan deadline) are generous: on a loaded machine they would stop sound rules; they only
    stop a hang here, and the cost is bounded in CPU time."""
    for rel in REPETITIVE_FILES:
        p = tmp_path / "root" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(unit * ((1 << 20) // len(unit)))
    for mode in ("--offline", "--live"):
        _code, report, _took, cpu, err = scan(tmp_path / "root", mode, "--rule-timeout", "120",
                                              deadline=300)
        assert "Traceback" not in err
        stuck = [(r["rule_id"], r["message"][:120]) for r in report["results"]
                 if "not evaluated" in r["message"] or "internal error" in r["message"]]
        assert not stuck, stuck
        assert cpu < 30, f"the scan took {cpu:.1f} s of CPU"
