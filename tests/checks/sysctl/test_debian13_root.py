"""A debootstrap Debian 13 (trixie) root with its kernel, scanned offline: no fail or
error verdict of a sysctl or SSH rule that the root's own programs contradict (issue 27).

The oracles are the root's own: its kernel image (the compiled-in value of each sysctl,
:mod:`tests.linux.sysctl.vmlinux_oracle`), ``systemd-sysctl --cat-config`` and ``sshd -T``
run in the root with ``chroot`` (the test runs them; aiaudit never does).  The root is
built once with debootstrap (about 6 minutes from a mirror; ``AIAUDIT_DEBOOTSTRAP_CACHE``
keeps it, ``AIAUDIT_TRIXIE_ROOT`` names a ready one).  ``tests/fixtures/roots/debian13-*``
are pruned copies of such a root (``tests/fixtures/make_debian13_roots.sh``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from aiaudit.core import plugins, ruleset
from aiaudit.core.host import Host
from aiaudit.core.ruleset.predicates import Predicate
from aiaudit.core.scan import ScanOptions, scan
from aiaudit.linux.sshd import config as sp
from aiaudit.linux.sysctl import boot as sysctl_boot
from aiaudit.linux.sysctl import patched
from tests.integration.test_golden_image import apt_mirror
from tests.linux.sysctl import vmlinux_oracle
from tests.modes_support import need

pytestmark = [pytest.mark.slow, pytest.mark.oracle]

INCLUDE = ("openssh-server", "procps", "systemd", "systemd-sysv", "linux-image-amd64")
IMAGE_KEYS = {
    "fs/protected_symlinks": "protected_symlinks", "fs/protected_hardlinks":
    "protected_hardlinks", "fs/protected_fifos": "protected_fifos",
    "fs/protected_regular": "protected_regular", "kernel/perf_event_paranoid":
    "perf_event_paranoid", "kernel/yama/ptrace_scope": "ptrace_scope",
    "kernel/kptr_restrict": "kptr_restrict", "kernel/dmesg_restrict": "dmesg_restrict",
    "kernel/unprivileged_bpf_disabled": "unprivileged_bpf_disabled",
    "kernel/randomize_va_space": "randomize_va_space", "fs/suid_dumpable": "suid_dumpable",
    "vm/swappiness": "swappiness", "vm/dirty_background_ratio": "dirty_background_ratio",
    "vm/dirty_ratio": "dirty_ratio", "vm/max_map_count": "max_map_count",
    "vm/zone_reclaim_mode": "zone_reclaim_mode", "net/core/rmem_max": "rmem_max",
    "net/core/wmem_max": "wmem_max"}
"""Sysctls whose data is a plain global (readable from the image), by slash key."""


DEFAULT_CACHE = Path(tempfile.gettempdir()) / "aiaudit-debootstrap"
"""Where the root is built without ``AIAUDIT_DEBOOTSTRAP_CACHE``."""
ROOT_NAME = "trixie-minbase-kernel-sshd"


@pytest.fixture(scope="module")
def trixie(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ready = os.environ.get("AIAUDIT_TRIXIE_ROOT")
    if ready:
        return Path(ready)
    need(shutil.which("debootstrap") is not None, "debootstrap")
    need(os.geteuid() == 0, "root (debootstrap, chroot)")
    mirror = apt_mirror()
    need(mirror is not None, "a Debian mirror in /etc/apt or $AIAUDIT_DEBIAN_MIRROR")
    cache = os.environ.get("AIAUDIT_DEBOOTSTRAP_CACHE")
    # kept between runs (a marker says the root is complete): tests/linux/sshd's view
    # oracle runs the same root's sshd 10
    base = Path(cache) if cache else DEFAULT_CACHE
    root = base / ROOT_NAME
    marker = base / f"{root.name}.complete"
    if marker.exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    base.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(INCLUDE)}",
                           "trixie", str(root), str(mirror)],
                          capture_output=True, text=True, timeout=45 * 60)
    need(proc.returncode == 0, f"debootstrap trixie: {(proc.stdout + proc.stderr)[-1500:]}")
    marker.write_text(f"trixie {mirror}\n")
    return root


@pytest.fixture(scope="module")
def image_values(trixie: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    why = vmlinux_oracle.available()
    need(why is None, why or "")
    [vmlinuz] = sorted((trixie / "boot").glob("vmlinuz-*"))
    vmlinux = vmlinux_oracle.extract(vmlinuz, tmp_path_factory.mktemp("k") / "vmlinux")
    got = vmlinux_oracle.initial_values(vmlinux, list(IMAGE_KEYS.values()))
    return {key: got[name] for key, name in IMAGE_KEYS.items() if name in got}


def _chroot(root: Path, *argv: str) -> str:
    return subprocess.run(["chroot", str(root), *argv], capture_output=True, text=True,
                          check=True, timeout=60).stdout


def test_kernel_defaults_are_the_images(trixie: Path, image_values: dict[str, int]) -> None:
    """Every default aiaudit derives (distribution patch, build config) is the value the
    kernel image itself starts with."""
    host = Host(str(trixie))
    checked = []
    for key in (*patched.PATCHED, "kernel/dmesg_restrict", "kernel/unprivileged_bpf_disabled"):
        kd = patched.patched_default(host, key) if key in patched.PATCHED \
            else sysctl_boot.kernel_default(host, key)
        assert kd is not None and kd.value == str(image_values[key]), (key, kd)
        checked.append(key)
    assert image_values["fs/protected_symlinks"] == 1  # Debian's patch, not upstream's 0
    assert len(checked) == 6


def _sysctl_files(root: Path) -> dict[str, str]:
    """The last assignment of each key in what the root's systemd-sysctl reads."""
    out: dict[str, str] = {}
    for line in _chroot(root, "/usr/lib/systemd/systemd-sysctl", "--cat-config").splitlines():
        m = re.match(r"\s*-?([\w./*-]+)\s*=\s*(.*?)\s*$", line)
        if m and not line.lstrip().startswith(("#", ";")):
            out[m.group(1).replace(".", "/")] = m.group(2)
    return out


def _sshd_t(root: Path) -> dict[str, str]:
    (root / "run/sshd").mkdir(parents=True, exist_ok=True)
    out: dict[str, str] = {}
    for line in _chroot(root, "/usr/sbin/sshd", "-T").splitlines():
        k, _, v = line.partition(" ")
        out.setdefault(k, v)
    return out


def test_no_verdict_the_roots_programs_contradict(trixie: Path,
                                                  image_values: dict[str, int]) -> None:
    files, sshd = _sysctl_files(trixie), _sshd_t(trixie)
    wrong, compared = [], 0
    for name in ("dl-training", "linux-hardening"):
        rs = ruleset.load(name, plugins.registry(), validate=True)
        params = {r.id: (r.check.id, dict(r.params)) for r in rs.rules}
        run = scan(rs, Host(str(trixie)), ScanOptions())
        for f in run.findings:
            check, p = params[f.rule_id]
            if f.status.value not in ("pass", "fail", "error"):
                continue
            if check == "kernel.sysctl":
                key = p["key"].replace(".", "/")
                value = files.get(key, image_values.get(key))
                if value is None:
                    continue
                want = Predicate.from_params(p).ok(str(value))
            elif check == "ssh.sshd_option":
                value = sshd.get(p["keyword"].lower())
                if value is None or f.result.subject != f.result.subject.split()[0]:
                    continue  # per-Match-block results: sshd -T prints the global value
                opt = p["keyword"].lower()
                ours = str(f.result.actual)
                ours = sp.PRINTED.get(opt, {}).get(ours, ours)  # sshd -T's spelling
                if f.status.value == "error" or ours.lower() != value.lower():
                    wrong.append(f"{name} {f.rule_id}: {f.status.value}, aiaudit {ours}, "
                                 f"sshd -T {value}")
                compared += 1
                continue
            else:
                continue
            compared += 1
            if f.status.value == "error" or (f.status.value == "pass") != want:
                wrong.append(f"{name} {f.rule_id}: {f.status.value} but the root says "
                             f"{value}: {f.result.message}")
    assert compared >= 30
    assert not wrong, "\n".join(wrong)
