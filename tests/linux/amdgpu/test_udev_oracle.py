"""The udev model of /dev/kfd and render-node permissions against the real ``udevadm test``.

A seeded corpus of rule files (OWNER/GROUP/MODE with ``=``, ``:=``, ``+=``, ``-=``, ``==``,
GOTO/LABEL, KERNEL/SUBSYSTEM/DEVTYPE matches, unknown groups, two rules directories with a
same-named file) is given to this machine's udev (``udevadm test``, which prints each
OWNER/GROUP/MODE assignment it performs with file and line) in a private mount namespace:
``/sys`` is a tmpfs holding only a fake ``kfd`` and ``renderD128`` device
(``SYSTEMD_DEVICE_VERIFY_SYSFS=0`` lets udev accept it), ``/run/udev`` and ``/dev/char``
are tmpfs, and the rules directories are bind mounts of the case's files, so nothing of the
real system is read or written.  The last printed value of each key must equal what
:func:`aiaudit.linux.amdgpu.access.node_perms` decides from the same files.  Needs root,
``unshare`` and ``udevadm``; skipped otherwise.
"""

from __future__ import annotations

import grp
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.amdgpu import access
from aiaudit.linux.udev import files as udev_files

CASES = 150
MATCHES = ['KERNEL=="kfd"', 'SUBSYSTEM=="kfd"', 'KERNEL=="renderD*"', 'SUBSYSTEM=="drm"',
           'KERNEL!="renderD*"', 'KERNEL=="kfd|renderD*"', 'ACTION=="add"',
           'ACTION=="remove"', 'DEVTYPE=="drm_minor"', 'ENV{DEVTYPE}=="drm_minor"',
           'SUBSYSTEM=="drm", KERNEL=="render*"']
SETS = ['GROUP="render"', 'GROUP="video"', 'GROUP:="video"', 'GROUP+="render"',
        'GROUP-="video"', 'GROUP=="video"', 'MODE="0666"', 'MODE:="0640"', 'MODE="0600"',
        'MODE="0660"', 'OWNER="root"', 'GROUP="nosuchgroup"', 'GROUP="0"', 'MODE="664"']

SCRIPT = r"""
set -e
mount -t tmpfs none /sys
mount -t tmpfs none /run/udev
mount -t tmpfs none /dev/char
mkdir -p /sys/devices/virtual/kfd/kfd /sys/class/kfd /sys/class/drm
mkdir -p /sys/devices/pci0000:00/0000:00:01.0/0000:05:00.0/drm/renderD128
printf 'MAJOR=235\nMINOR=0\nDEVNAME=kfd\n' > /sys/devices/virtual/kfd/kfd/uevent
ln -s ../../../class/kfd /sys/devices/virtual/kfd/kfd/subsystem
R=/sys/devices/pci0000:00/0000:00:01.0/0000:05:00.0/drm/renderD128
printf 'MAJOR=226\nMINOR=128\nDEVNAME=dri/renderD128\nDEVTYPE=drm_minor\n' > $R/uevent
ln -s ../../../../../../class/drm $R/subsystem
for d in "$@"; do
  mount --bind "$d/etc" /etc/udev/rules.d
  mount --bind "$d/usr" /usr/lib/udev/rules.d
  for dev in /sys/devices/virtual/kfd/kfd $R; do
    echo "@@@CASE $d $dev"
    SYSTEMD_DEVICE_VERIFY_SYSFS=0 udevadm test --action=add "$dev" 2>&1 || true
  done
  umount /etc/udev/rules.d /usr/lib/udev/rules.d
done
"""


def _usable() -> str | None:
    if os.geteuid() != 0:
        return "needs root (private mount namespace)"
    for tool in ("unshare", "udevadm"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    for d in ("/run/udev", "/dev/char", "/etc/udev/rules.d", "/usr/lib/udev/rules.d"):
        if not os.path.isdir(d):
            return f"{d} does not exist here"
    for g in ("render", "video"):
        try:
            grp.getgrnam(g)
        except KeyError:
            return f"this machine has no group {g}"
    return None


def _corpus(base: Path) -> list[Path]:
    rng = random.Random(31)
    out = []
    for n in range(CASES):
        case = base / f"case{n:02d}"
        for sub in ("etc", "usr"):
            (case / sub).mkdir(parents=True)
        for sub, name in (("usr", "50-default.rules"), ("usr", "70-amdgpu.rules"),
                          ("etc", "70-amdgpu.rules"), ("etc", "80-local.rules")):
            if rng.random() < 0.3:
                continue
            lines = []
            for i in range(rng.randint(1, 5)):
                if rng.random() < 0.1:
                    lines += [f"{rng.choice(MATCHES)}, GOTO=\"skip{i}\"",
                              f"{rng.choice(MATCHES)}, {rng.choice(SETS)}",
                              f"LABEL=\"skip{i}\""]
                    continue
                sets = ", ".join(rng.sample(SETS, rng.randint(1, 2)))
                lines.append(f"{rng.choice(MATCHES)}, {sets}")
            (case / sub / name).write_text("\n".join(lines) + "\n")
        out.append(case)
    return out


_LINE = re.compile(r"^(kfd|renderD128): \S+:\d+ (GROUP|MODE|OWNER) (\S+)$")


def _udev_says(cases: list[Path]) -> dict[tuple[str, str], dict[str, str]]:
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", SCRIPT,
                           "sh", *map(str, cases)], capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got: dict[tuple[str, str], dict[str, str]] = {}
    key: tuple[str, str] | None = None
    for line in proc.stdout.splitlines():
        if line.startswith("@@@CASE "):
            _, case, dev = line.split(" ", 2)
            key = (case, "kfd" if dev.endswith("/kfd") else "renderD128")
            got[key] = {}
            continue
        m = _LINE.match(line.strip())
        if m and key is not None:
            got[key][m.group(2)] = m.group(3)
    return got


def _model(case: Path, dev: str) -> dict[str, str]:
    root = case / "root"
    for sub, where in (("etc", "etc/udev/rules.d"), ("usr", "usr/lib/udev/rules.d")):
        shutil.copytree(case / sub, root / where, dirs_exist_ok=True)
    rules = udev_files.load(Host(str(root))).rules
    d = access.kfd_device() if dev == "kfd" else access.render_device("renderD128")

    def gid_of(name: str) -> int | None:
        try:
            return grp.getgrnam(name).gr_gid
        except KeyError:
            return None

    p = access.node_perms(rules, d, gid_of=gid_of)
    assert not p.uncertain
    out = {}
    if p.group is not None:
        gid = int(p.group.value) if p.group.value.isdigit() else gid_of(p.group.value)
        out["GROUP"] = str(4294967295 if gid is None else gid)
    if p.mode is not None:
        out["MODE"] = f"{int(p.mode.value, 8):04o}"
    if p.owner is not None:
        out["OWNER"] = "0" if p.owner.value == "root" else p.owner.value
    return out


def test_model_agrees_with_udevadm_test(tmp_path: Path) -> None:
    why = _usable()
    if why:
        pytest.skip(why)
    cases = _corpus(tmp_path)
    said = _udev_says(cases)
    assert len(said) == 2 * CASES, "udevadm test did not run for every case"
    wrong = []
    for case in cases:
        for dev in ("kfd", "renderD128"):
            want, got = said[(str(case), dev)], _model(case, dev)
            if want != got:
                texts = {f"{p.parent.name}/{p.name}": p.read_text()
                         for p in sorted(case.glob("*/*.rules"))}
                wrong.append(f"{case.name} {dev}: udev {want} model {got} {texts}")
    assert not wrong, "\n".join(wrong[:5])
