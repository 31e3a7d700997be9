"""Which block devices the disk-tuning checks audit, their class, and the kernel's defaults.

Live, every whole disk in ``/sys/block``: NVMe namespaces ``nvme<S>n<N>``, SATA/SAS/virtio
disks told apart by ``queue/rotational``; hidden NVMe multipath paths ``nvme<S>c<C>n<N>``
(drivers/nvme/host/multipath.c: the ``hidden`` attribute), partitions (not in
``/sys/block``), loop, zram, dm, md and other stacked or virtual devices are left out.
Offline there are no devices: one representative per device class (``nvme0n1``, ``sda``).

Defaults at boot: block/elevator.c ``elevator_get_default`` (no elevator for a device with
more than one hardware queue, ``mq-deadline`` otherwise), ``VM_READAHEAD_PAGES`` (128 KiB,
include/linux/mm.h).
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Iterator, Mapping

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.sysfs import read_opt

CLASSES = ("nvme", "ssd", "hdd")
CLASS_TEXT = {"nvme": "NVMe namespace", "ssd": "non-rotational SATA/SAS/virtio disk",
              "hdd": "rotational disk"}
REPRESENTATIVE = {"nvme": "nvme0n1", "ssd": "sda", "hdd": "sda"}
"""The device name an offline scan evaluates udev rules and tuned ``devices=`` for."""

NVME_NS = re.compile(r"nvme\d+n\d+")
NVME_PATH = re.compile(r"nvme\d+c\d+n\d+")
VIRTUAL = re.compile(r"(loop|ram|zram|dm-|md|nbd|sr|drbd|rbd|fd|mtdblock|ublkb)")
DEFAULT_RA_KB = 128
"""``VM_READAHEAD_PAGES`` (include/linux/mm.h): 128 KiB, raised to ``2*io_opt`` by some
drivers (block/blk-settings.c)."""


@record
class Disk:
    """A whole disk (live) or a device class representative (offline)."""

    name: str
    cls: str
    """``nvme``, ``ssd`` or ``hdd``."""
    subject: str
    """The result subject: the disk name live, ``class:<cls>`` offline."""
    sysdir: str | None
    """``/sys/block/<name>`` when live."""
    attrs: Mapping[str, str] = field(default_factory=dict)
    """sysfs attributes for udev ``ATTR{...}`` matches (read on demand when live)."""


class _SysAttrs(Mapping[str, str]):
    """sysfs attributes of a live disk, read on demand through the Host (for udev
    ``ATTR{...}`` matches)."""

    def __init__(self, host: Host, sysdir: str) -> None:
        self.host, self.sysdir = host, sysdir

    def __getitem__(self, key: str) -> str:
        if ".." in key.split("/"):
            raise KeyError(key)
        try:
            return self.host.read_text(f"{self.sysdir}/{key}").strip()
        except HostError:
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[str]:  # pragma: no cover - udev matching only looks up
        return iter(())

    def __len__(self) -> int:  # pragma: no cover
        return 0


def live_disks(host: Host) -> tuple[list[Disk], list[str]]:
    """Audited disks in ``/sys/block`` and notes on what was left out (memoized)."""
    return host.memo(("block-disks",), lambda: _live_disks(host))


def _left_out(host: Host, name: str, d: str) -> str | None:
    """Why ``/sys/block/<name>`` is not audited (``None``: it is)."""
    if NVME_PATH.fullmatch(name) or read_opt(host, f"{d}/hidden") == "1":
        return f"{name} (hidden multipath path)"
    if VIRTUAL.match(name):
        return f"{name} (virtual/stacked)"
    if not host.exists(f"{d}/queue/scheduler"):
        return f"{name} (no queue)"
    return None


def _live_disks(host: Host) -> tuple[list[Disk], list[str]]:
    disks: list[Disk] = []
    left: list[str] = []
    for name in host.listdir("/sys/block"):
        d = f"/sys/block/{name}"
        why = _left_out(host, name, d)
        if why is not None:
            left.append(why)
            continue
        if NVME_NS.fullmatch(name):
            cls = "nvme"
        else:
            cls = "hdd" if read_opt(host, f"{d}/queue/rotational") == "1" else "ssd"
        disks.append(Disk(name, cls, name, d, _SysAttrs(host, d)))
    return disks, left


def offline_disks(classes: list[str]) -> list[Disk]:
    """One representative per class for an offline scan."""
    out = []
    for cls in classes:
        rot = "1" if cls == "hdd" else "0"
        out.append(Disk(REPRESENTATIVE[cls], cls, f"class:{cls}", None,
                        {"queue/rotational": rot, "removable": "0"}))
    return out


def nr_hw_queues(host: Host, disk: Disk) -> int | None:
    """Hardware queues of a live blk-mq disk (``mq/<n>`` directories), else ``None``."""
    if disk.sysdir is None:
        return None
    try:
        return len([n for n in host.listdir(f"{disk.sysdir}/mq") if n.isdigit()]) or None
    except HostError:
        return None


def default_scheduler(host: Host, disk: Disk) -> tuple[str, str]:
    """(elevator, why): block/elevator.c ``elevator_get_default``: no elevator when the
    device has more than one hardware queue, else mq-deadline."""
    n = nr_hw_queues(host, disk)
    if n is not None:
        v = "none" if n > 1 else "mq-deadline"
        return v, f"kernel default for a blk-mq device with {n} hardware queue(s)"
    if disk.cls == "nvme":
        return "none", "kernel default for multi-queue NVMe (assumed: more than one queue)"
    return "mq-deadline", "kernel default for a single-queue disk"
