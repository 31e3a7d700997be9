"""block.scheduler: live, offline, udev rules, tuned [disk] elevator."""

from __future__ import annotations

import os

from aiaudit.core.model import Aspect, Status
from tests.checks.tuning_trees import TUNED_ENABLED, TUNED_LINK, by_subject, disk, disks_root
from tests.helpers import run_check


def test_scheduler_live_pass_and_fail(make_root) -> None:
    root = disks_root(make_root, disk("nvme0n1", "[none] mq-deadline", queues=8),
                      disk("nvme1n1", "none [kyber] mq-deadline", queues=8),
                      disk("sda", "[mq-deadline] none", queues=1))
    res = by_subject(run_check("block.scheduler", root, live=True))
    assert res["nvme0n1"].status is Status.PASS
    bad = res["nvme1n1"]
    assert bad.status is Status.FAIL and bad.aspect is Aspect.RUNTIME
    assert "kernel default" in bad.message and bad.actual == "kyber"
    # the kernel default is right at boot: write it now, add no rule (issue 30)
    assert [(s.kind, s.content) for s in bad.remediation.snippets] == [
        ("command", "echo none > /sys/block/nvme1n1/queue/scheduler")]
    assert res["sda"].status is Status.PASS


def test_hidden_paths_partitions_and_virtual_devices_are_not_subjects(make_root) -> None:
    root = disks_root(make_root, disk("nvme0n1", "[none]"),
                      disk("nvme0c0n1", "[kyber] none", hidden="1"),
                      disk("nvme2n1", "[kyber] none", hidden="1"),
                      disk("loop0", "[kyber] none"), disk("dm-0", "none"),
                      files={"/sys/devices/virtual/test/nvme0n1/nvme0n1p1/partition": "1\n"})
    assert [r.subject for r in run_check("block.scheduler", root, live=True)] == ["nvme0n1"]


def test_bare_none_means_no_elevator_skip(make_root) -> None:
    root = disks_root(make_root, disk("vdb", "none", rot="1"))
    (r,) = run_check("block.scheduler", root, live=True)
    assert r.status is Status.SKIP and "cannot have an I/O scheduler" in r.message


def test_no_disks_skip(make_root) -> None:
    root = disks_root(make_root, disk("loop0", "[none]"))
    (r,) = run_check("block.scheduler", root, live=True)
    assert r.status is Status.SKIP and "loop0 (virtual/stacked)" in r.message


def test_single_queue_nvme_default_is_mq_deadline(make_root) -> None:
    root = disks_root(make_root, disk("nvme0n1", "[mq-deadline] none", queues=1))
    (r,) = run_check("block.scheduler", root, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    assert "mq-deadline (kernel default for a blk-mq device with 1 hardware queue(s))" in \
        r.message


def test_scheduler_live_drift_when_rule_reverts(make_root) -> None:
    rules = {"/etc/udev/rules.d/60-s.rules":
             'KERNEL=="nvme*", ATTR{queue/scheduler}="bfq"\n'}
    root = disks_root(make_root, disk("nvme0n1", "[none] bfq"), files=rules)
    (r,) = run_check("block.scheduler", root, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT
    assert "60-s.rules:1" in r.message


def test_offline_classes_pass_and_fail(make_root) -> None:
    root = make_root({"/usr/lib/udev/rules.d/60-block-scheduler.rules":
                      'ACTION=="add", SUBSYSTEM=="block", KERNEL=="sd*[!0-9]", '
                      'ATTR{queue/rotational}=="1", ATTR{queue/scheduler}="none"\n'})
    res = by_subject(run_check("block.scheduler", root))
    assert res["class:nvme"].status is Status.PASS
    assert res["class:ssd"].status is Status.PASS
    hdd = res["class:hdd"]
    assert hdd.status is Status.FAIL and hdd.aspect is Aspect.PERSISTED
    assert any(s.kind == "command" and "udevadm trigger" in s.content
               for s in hdd.remediation.snippets)


def test_offline_etc_masks_vendor_rules_file(make_root) -> None:
    vendor = {"/usr/lib/udev/rules.d/60-s.rules": 'KERNEL=="nvme*", ATTR{queue/scheduler}="bfq"\n'}
    root = make_root(vendor, links={"/etc/udev/rules.d/60-s.rules": "/dev/null"})
    assert by_subject(run_check("block.scheduler", root))["class:nvme"].status is Status.PASS
    root = make_root(vendor)
    assert by_subject(run_check("block.scheduler", root))["class:nvme"].status is Status.FAIL


def test_offline_undecidable_match_is_an_honest_error(make_root) -> None:
    root = make_root({"/etc/udev/rules.d/60-s.rules":
                      'KERNEL=="nvme*", ENV{ID_MODEL}=="Samsung*", ATTR{queue/scheduler}="bfq"\n'})
    r = by_subject(run_check("block.scheduler", root))["class:nvme"]
    assert r.status is Status.ERROR
    assert "cannot decide ENV{ID_MODEL}==\"Samsung*\"" in r.message
    assert "60-s.rules:1" in r.message


def test_undecidable_rule_that_cannot_change_the_verdict_is_fine(make_root) -> None:
    root = make_root({"/etc/udev/rules.d/60-s.rules":
                      'KERNEL=="nvme*", ENV{ID_MODEL}=="Samsung*", ATTR{queue/scheduler}="none"\n'})
    assert by_subject(run_check("block.scheduler", root))["class:nvme"].status is Status.PASS


def test_tuned_disk_elevator_overrides_udev(make_root) -> None:
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "t\n",
             "/etc/tuned/t/tuned.conf": "[disk]\ndevices=sd*\nelevator=bfq\n"
                                        "[disk_nvme]\ntype=disk\ndevices=nvme*\nelevator=kyber\n",
             "/etc/udev/rules.d/60-s.rules": 'KERNEL=="nvme*", ATTR{queue/scheduler}="none"\n'}
    res = by_subject(run_check("block.scheduler", make_root(files, TUNED_LINK)))
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
