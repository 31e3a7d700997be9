"""block.scheduler and block.read_ahead: live, offline, udev, tuned, oracle against udevadm."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Status
from aiaudit.linux.udev import rules as up
from tests.checks.tuning_trees import TUNED_ENABLED, TUNED_LINK, disk
from tests.helpers import run_check


def _live(make_root, *disks, files=None, links=None):
    f: dict[str, str] = dict(files or {})
    lk: dict[str, str] = dict(links or {})
    for df, dl in disks:
        f.update(df)
        lk.update(dl)
    f["/proc/cmdline"] = "ro\n"
    return make_root(f, lk)


def _by_subject(results):
    return {r.subject: r for r in results}


def test_scheduler_live_pass_and_fail(make_root) -> None:
    root = _live(make_root, disk("nvme0n1", "[none] mq-deadline", queues=8),
                 disk("nvme1n1", "none [kyber] mq-deadline", queues=8),
                 disk("sda", "[mq-deadline] none", queues=1))
    res = _by_subject(run_check("block.scheduler", root, live=True))
    assert res["nvme0n1"].status is Status.PASS
    bad = res["nvme1n1"]
    assert bad.status is Status.FAIL and bad.aspect is Aspect.RUNTIME
    assert "kernel default" in bad.message and bad.actual == "kyber"
    cmds = [s.content for s in bad.remediation.snippets if s.kind == "command"]
    assert cmds == ["echo none > /sys/block/nvme1n1/queue/scheduler"]
    rule = next(s for s in bad.remediation.snippets if s.kind == "file")
    assert rule.path == "/etc/udev/rules.d/99-zz-aiaudit-block.rules"
    assert 'ATTR{queue/scheduler}="none"' in rule.content
    assert res["sda"].status is Status.PASS


def test_hidden_paths_partitions_and_virtual_devices_are_not_subjects(make_root) -> None:
    root = _live(make_root, disk("nvme0n1", "[none]"),
                 disk("nvme0c0n1", "[kyber] none", hidden="1"),
                 disk("nvme2n1", "[kyber] none", hidden="1"),
                 disk("loop0", "[kyber] none"), disk("dm-0", "none"),
                 files={"/sys/devices/virtual/test/nvme0n1/nvme0n1p1/partition": "1\n"})
    assert [r.subject for r in run_check("block.scheduler", root, live=True)] == ["nvme0n1"]


def test_bare_none_means_no_elevator_skip(make_root) -> None:
    root = _live(make_root, disk("vdb", "none", rot="1"))
    (r,) = run_check("block.scheduler", root, live=True)
    assert r.status is Status.SKIP and "cannot have an I/O scheduler" in r.message


def test_no_disks_skip(make_root) -> None:
    root = _live(make_root, disk("loop0", "[none]"))
    (r,) = run_check("block.scheduler", root, live=True)
    assert r.status is Status.SKIP and "loop0 (virtual/stacked)" in r.message


def test_single_queue_nvme_default_is_mq_deadline(make_root) -> None:
    root = _live(make_root, disk("nvme0n1", "[mq-deadline] none", queues=1))
    (r,) = run_check("block.scheduler", root, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    assert "mq-deadline (kernel default for a blk-mq device with 1 hardware queue(s))" in \
        r.message


def test_scheduler_live_drift_when_rule_reverts(make_root) -> None:
    rules = {"/etc/udev/rules.d/60-s.rules":
             'KERNEL=="nvme*", ATTR{queue/scheduler}="bfq"\n'}
    root = _live(make_root, disk("nvme0n1", "[none] bfq"), files=rules)
    (r,) = run_check("block.scheduler", root, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT
    assert "60-s.rules:1" in r.message


def test_offline_classes_pass_and_fail(make_root) -> None:
    root = make_root({"/usr/lib/udev/rules.d/60-block-scheduler.rules":
                      'ACTION=="add", SUBSYSTEM=="block", KERNEL=="sd*[!0-9]", '
                      'ATTR{queue/rotational}=="1", ATTR{queue/scheduler}="none"\n'})
    res = _by_subject(run_check("block.scheduler", root))
    assert res["class:nvme"].status is Status.PASS
    assert res["class:ssd"].status is Status.PASS
    hdd = res["class:hdd"]
    assert hdd.status is Status.FAIL and hdd.aspect is Aspect.PERSISTED
    assert any(s.kind == "command" and "udevadm trigger" in s.content
               for s in hdd.remediation.snippets)


def test_offline_etc_masks_vendor_rules_file(make_root) -> None:
    vendor = {"/usr/lib/udev/rules.d/60-s.rules": 'KERNEL=="nvme*", ATTR{queue/scheduler}="bfq"\n'}
    root = make_root(vendor, links={"/etc/udev/rules.d/60-s.rules": "/dev/null"})
    assert _by_subject(run_check("block.scheduler", root))["class:nvme"].status is Status.PASS
    root = make_root(vendor)
    assert _by_subject(run_check("block.scheduler", root))["class:nvme"].status is Status.FAIL


def test_offline_undecidable_match_is_an_honest_error(make_root) -> None:
    root = make_root({"/etc/udev/rules.d/60-s.rules":
                      'KERNEL=="nvme*", ENV{ID_MODEL}=="Samsung*", ATTR{queue/scheduler}="bfq"\n'})
    r = _by_subject(run_check("block.scheduler", root))["class:nvme"]
    assert r.status is Status.ERROR
    assert "cannot decide ENV{ID_MODEL}==\"Samsung*\"" in r.message
    assert "60-s.rules:1" in r.message


def test_undecidable_rule_that_cannot_change_the_verdict_is_fine(make_root) -> None:
    root = make_root({"/etc/udev/rules.d/60-s.rules":
                      'KERNEL=="nvme*", ENV{ID_MODEL}=="Samsung*", ATTR{queue/scheduler}="none"\n'})
    assert _by_subject(run_check("block.scheduler", root))["class:nvme"].status is Status.PASS


def test_tuned_disk_elevator_overrides_udev(make_root) -> None:
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "t\n",
             "/etc/tuned/t/tuned.conf": "[disk]\ndevices=sd*\nelevator=bfq\n"
                                        "[disk_nvme]\ntype=disk\ndevices=nvme*\nelevator=kyber\n",
             "/etc/udev/rules.d/60-s.rules": 'KERNEL=="nvme*", ATTR{queue/scheduler}="none"\n'}
    res = _by_subject(run_check("block.scheduler", make_root(files, TUNED_LINK)))
    assert res["class:nvme"].status is Status.FAIL and "tuned [disk] elevator=kyber" in \
        res["class:nvme"].message
    assert "in the tuned profile" in res["class:nvme"].remediation.manual
    assert res["class:hdd"].status is Status.PASS          # bfq allowed on disks
    assert res["class:ssd"].status is Status.FAIL


def test_unreadable_rules_file_is_an_error(make_root, tmp_path) -> None:
    root = make_root(dirs=("/etc/udev/rules.d/60-dir.rules",))
    os.mkfifo(root / "etc/udev/rules.d/70-fifo.rules")
    res = run_check("block.scheduler", root)
    assert {r.status for r in res} == {Status.ERROR}


def test_read_ahead_live_and_offline(make_root) -> None:
    root = _live(make_root, disk("nvme0n1", "[none]", ra="128"),
                 disk("sda", "[mq-deadline]", ra="8", queues=1))
    res = _by_subject(run_check("block.read_ahead", root, {"min_kb": 128, "max_kb": 4096},
                                live=True))
    assert res["nvme0n1"].status is Status.PASS
    assert res["sda"].status is Status.FAIL and res["sda"].actual == "8"
    assert "echo 128 > /sys/block/sda/queue/read_ahead_kb" in [
        s.content for s in res["sda"].remediation.snippets]
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "t\n",
             "/etc/tuned/t/tuned.conf": "[disk]\nreadahead=>8192 s\n"}
    res = _by_subject(run_check("block.read_ahead", make_root(files, TUNED_LINK),
                                {"min_kb": 128, "max_kb": 4096}))
    assert all(r.status is Status.PASS for r in res.values())   # 8192 sectors = 4096 KB
    files["/etc/tuned/t/tuned.conf"] = "[disk]\nreadahead=16384\n"
    res = run_check("block.read_ahead", make_root(files, TUNED_LINK), {"max_kb": 4096})
    assert all(r.status is Status.FAIL and r.aspect is Aspect.PERSISTED for r in res)


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
