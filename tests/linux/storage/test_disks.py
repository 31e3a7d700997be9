"""aiaudit.linux.storage.disks: which disks are audited, their class, the kernel defaults."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.storage import disks
from tests.checks.tuning_trees import disk, disks_root


def test_live_disks_classes_and_what_is_left_out(make_root) -> None:
    root = disks_root(make_root, disk("nvme0n1", "[none]"), disk("sda", "[mq-deadline]"),
                      disk("sdb", "[bfq]", rot="1"), disk("nvme0c0n1", "[none]"),
                      disk("nvme1n1", "[none]", hidden="1"), disk("dm-0", "none"),
                      files={"/sys/devices/virtual/test/vdz/size": "0\n"},
                      links={"/sys/block/vdz": "../devices/virtual/test/vdz"})
    found, left = disks.live_disks(Host(str(root), live=True))
    assert [(d.name, d.cls, d.subject, d.sysdir) for d in found] == [
        ("nvme0n1", "nvme", "nvme0n1", "/sys/block/nvme0n1"),
        ("sda", "ssd", "sda", "/sys/block/sda"), ("sdb", "hdd", "sdb", "/sys/block/sdb")]
    assert left == ["dm-0 (virtual/stacked)", "nvme0c0n1 (hidden multipath path)",
                    "nvme1n1 (hidden multipath path)", "vdz (no queue)"]
    # udev ATTR{...} matches read the live attributes on demand, inside the disk only
    attrs = found[2].attrs
    assert attrs["queue/rotational"] == "1"
    assert "queue/nothing" not in attrs and "../sda/queue/rotational" not in attrs


def test_offline_representatives() -> None:
    got = disks.offline_disks(["nvme", "hdd"])
    assert [(d.name, d.subject, d.sysdir, dict(d.attrs)) for d in got] == [
        ("nvme0n1", "class:nvme", None, {"queue/rotational": "0", "removable": "0"}),
        ("sda", "class:hdd", None, {"queue/rotational": "1", "removable": "0"})]


def test_default_scheduler_follows_the_hardware_queues(make_root) -> None:
    root = disks_root(make_root, disk("nvme0n1", "[none]", queues=8),
                      disk("nvme1n1", "[mq-deadline]", queues=1))
    host = Host(str(root), live=True)
    by = {d.name: d for d in disks.live_disks(host)[0]}
    assert disks.default_scheduler(host, by["nvme0n1"]) == (
        "none", "kernel default for a blk-mq device with 8 hardware queue(s)")
    assert disks.default_scheduler(host, by["nvme1n1"])[0] == "mq-deadline"
    nvme, ssd = disks.offline_disks(["nvme", "ssd"])
    assert disks.nr_hw_queues(host, nvme) is None
    assert disks.default_scheduler(host, nvme)[0] == "none"
    assert disks.default_scheduler(host, ssd) == (
        "mq-deadline", "kernel default for a single-queue disk")
