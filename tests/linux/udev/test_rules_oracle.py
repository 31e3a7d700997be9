"""Oracle: aiaudit.linux.udev.rules.attr_writes against ``udevadm test`` on this machine."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.udev import rules as up


# ---------------------------------------------------------------------- oracle: udevadm
def _real_disk() -> str | None:
    for name in sorted(os.listdir("/sys/block")):
        if re.match(r"(loop|ram|zram|dm-|md|sr|nbd)", name):
            continue
        if os.path.exists(f"/sys/block/{name}/queue/read_ahead_kb"):
            return name
    return None


ORACLE_RULES = {
    "etc": {
        "50-a.rules": 'SUBSYSTEM!="block", GOTO="a_end"\n'
                      'KERNEL=="nvme*|xvd*", GOTO="a_end"\n'
                      'ACTION=="add|change", KERNEL=="{d}", ATTR{{queue/read_ahead_kb}}="{v}"\n'
                      'LABEL="a_end"\n'
                      'ATTR{{queue/rotational}}=="{rot}", ATTR{{queue/read_ahead_kb}}="{v}"\n',
        "60-same.rules": 'KERNEL=="{d}", ATTR{{queue/read_ahead_kb}}="{v}"\n',
        "70-masked.rules": None,   # -> /dev/null
        "80-not.rules": 'KERNEL!="{d}", ATTR{{queue/read_ahead_kb}}="{v}"\n'
                        'ENV{{DEVTYPE}}=="partition", ATTR{{queue/read_ahead_kb}}="{v}"\n'
                        'ENV{{DEVTYPE}}=="disk", KERNEL=="?d[a-z]|sd*|nvme*", '
                        'ATTR{{queue/read_ahead_kb}}="{v}"\n',
    },
    "lib": {
        "60-same.rules": 'ATTR{{queue/read_ahead_kb}}="{v}"\n',      # hidden by /etc
        "65-lib.rules": 'ACTION=="remove", GOTO="l_end"\n'
                        'ATTR{{queue/rotational}}!="{rot}", ATTR{{queue/read_ahead_kb}}="{v}"\n'
                        'KERNEL=="{d}", ATTR{{queue/read_ahead_kb}}="{v}"\nLABEL="l_end"\n',
        "70-masked.rules": 'ATTR{{queue/read_ahead_kb}}="{v}"\n',
    },
}


@pytest.mark.oracle
def test_udev_rule_evaluation_matches_udevadm(tmp_path: Path) -> None:
    """Run ``udevadm test`` in a private mount namespace with our rules directories bound
    over the system's, and compare the ``ATTR`` writes it performs (file:line, in order) with
    :func:`aiaudit.linux.udev.rules.attr_writes`.  Every rule writes the attribute's current
    value, so the test changes nothing on the machine."""
    need = [shutil.which(p) for p in ("udevadm", "unshare", "mount")]
    dev = _real_disk()
    if None in need or dev is None or os.geteuid() != 0 or \
            not os.path.isdir("/usr/lib/udev/rules.d"):
        if os.environ.get("CI"):
            pytest.fail("udevadm, unshare, root and a block device are required in CI")
        pytest.skip("needs root, udevadm (apt: udev), unshare and a block device")
    ra = Path(f"/sys/block/{dev}/queue/read_ahead_kb").read_text().strip()
    rot = Path(f"/sys/block/{dev}/queue/rotational").read_text().strip()
    dirs = {}
    for kind, files in ORACLE_RULES.items():
        d = tmp_path / kind
        d.mkdir()
        dirs[kind] = d
        for name, text in files.items():
            if text is None:
                os.symlink("/dev/null", d / name)
            else:
                (d / name).write_text(text.format(d=dev, v=ra, rot=rot))
    binds = (f"mount --bind {dirs['etc']} /etc/udev/rules.d && "
             f"mount --bind {dirs['lib']} /usr/lib/udev/rules.d && "
             f"mount -t tmpfs none /run/udev/rules.d 2>/dev/null; "
             f"[ -L /lib ] || mount --bind {dirs['lib']} /lib/udev/rules.d; ")
    if not os.path.isdir("/etc/udev/rules.d"):
        pytest.skip("/etc/udev/rules.d missing")
    out = subprocess.run(["unshare", "-m", "sh", "-c",
                          binds + f"udevadm test --action=add /sys/block/{dev}"],
                         capture_output=True, text=True, timeout=60)
    log = out.stdout + out.stderr
    real = re.findall(r"(\d\d-[\w-]+\.rules):(\d+) ATTR '[^']*/read_ahead_kb' writing", log)
    assert real, log[-2000:]
    # ours: the same directories as a fixture root
    root = tmp_path / "root"
    for kind, sub in (("etc", "etc/udev/rules.d"), ("lib", "usr/lib/udev/rules.d")):
        shutil.copytree(dirs[kind], root / sub, symlinks=True)
    from aiaudit.linux.udev import files as udev

    host = Host(str(root), live=False)
    rules = udev.load(host).rules
    attrs = {"queue/rotational": rot, "queue/read_ahead_kb": ra}
    writes = up.attr_writes(rules, up.Device(dev, attrs=attrs), "queue/read_ahead_kb")
    assert all(w.certain for w in writes)
    ours = [(w.rule.file.rsplit("/", 1)[1], str(w.rule.line)) for w in writes]
    assert ours == real, (ours, real)
    assert len(real) >= 5
    assert Path(f"/sys/block/{dev}/queue/read_ahead_kb").read_text().strip() == ra

