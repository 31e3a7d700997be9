"""``block.scheduler``: each disk uses the I/O scheduler allowed for its class, now and at
boot.

Live, one result per whole disk from ``/sys/block`` (:mod:`aiaudit.linux.storage.disks`:
NVMe namespaces, SATA/SAS/virtio SSDs and rotational disks; hidden NVMe multipath paths,
partitions, loop, zram, dm and md devices are not audited): the bracketed choice of
``queue/scheduler`` (Documentation/ABI/stable/sysfs-block); a bare ``none`` means a bio-based
queue that cannot have a scheduler (skipped).  Offline, one result per device class.

At boot (:mod:`aiaudit.linux.storage.boot_value`): the kernel default (block/elevator.c
``elevator_get_default``: no elevator for multi-queue devices, ``mq-deadline`` for
single-queue ones), then udev ``ATTR{queue/scheduler}=`` writes, then tuned ``[disk]
elevator``.  ``elevator=`` on the command line is ignored by blk-mq kernels (since 5.0).

Decide: :func:`aiaudit.linux.storage.queue_rule.decide`.
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.api import CheckContext, CheckSpec, Result, hookimpl
from aiaudit.core.errors import ParseError
from aiaudit.linux import sysfs
from aiaudit.linux.storage import queue_rule
from aiaudit.linux.storage.boot_value import Boot, boot_value
from aiaudit.linux.storage.disks import CLASSES, Disk, default_scheduler
from aiaudit.linux.sysfs import read_opt

ATTR = "queue/scheduler"
_CLASS_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1}
SCHED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "nvme": {**_CLASS_LIST, "default": ["none"],
                 "description": "allowed schedulers for NVMe namespaces"},
        "ssd": {**_CLASS_LIST, "default": ["mq-deadline", "none"],
                "description": "allowed schedulers for non-rotational SATA/SAS disks"},
        "hdd": {**_CLASS_LIST, "default": ["mq-deadline", "bfq"],
                "description": "allowed schedulers for rotational disks"},
        "classes": {"type": "array", "items": {"enum": list(CLASSES)}, "uniqueItems": True,
                    "default": list(CLASSES), "description": "device classes to audit"},
        "persist": {"type": "boolean", "default": True,
                    "description": "also require the boot-time value to be right"},
    },
}


def parse_scheduler(text: str) -> str | None:
    """The active scheduler of a ``queue/scheduler`` text; ``(text)`` when none is
    bracketed (a bio-based queue), ``None`` when it cannot be parsed."""
    try:
        ch = sysfs.parse_choice(text)
    except ParseError:
        return None
    return ch.active if ch.active is not None else f"({text.strip()})"


def no_scheduler(disk: Disk, value: str) -> str | None:
    """Why a disk whose scheduler file reads ``value`` is not applicable."""
    if value.startswith("("):
        return (f"{disk.name} cannot have an I/O scheduler (bio-based queue: scheduler "
                f"file reads {value[1:-1]!r})")
    return None


def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the I/O scheduler rule for every audited disk."""
    host, p = ctx.host, ctx.params

    def allowed(disk: Disk) -> list[str]:
        return list(p.get(disk.cls) or [])

    def read(disk: Disk) -> str | None:
        assert disk.sysdir
        text = read_opt(host, f"{disk.sysdir}/{ATTR}")
        return None if text is None else parse_scheduler(text)

    def boot(disk: Disk) -> Boot:
        d, why = default_scheduler(host, disk)
        return boot_value(host, disk, (ATTR,), d, why, "elevator")

    return queue_rule.evaluate(ctx, queue_rule.QueueAttr(
        what="I/O scheduler", attr=ATTR, read=read, ok=lambda d, v: v in allowed(d),
        want=lambda d: "one of " + ", ".join(allowed(d)), boot=boot,
        fix=lambda d: allowed(d)[0], skip=no_scheduler))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``block.scheduler``."""
    return [CheckSpec(
        id="block.scheduler",
        title="Each disk uses the I/O scheduler expected for its class, now and at boot",
        run=run,
        params_schema=SCHED_SCHEMA,
        description=(
            "Live: /sys/block/<disk>/queue/scheduler of every NVMe namespace and SATA/SAS/"
            "virtio disk (hidden NVMe paths, partitions, loop/dm/md/zram skipped). Boot: "
            "the kernel default (none for multi-queue, mq-deadline for single-queue), "
            "then udev ATTR{queue/scheduler} writes (rules dirs, same-name override, "
            "lexical order, GOTO/LABEL, undecidable matches reported), then tuned "
            "[disk] elevator when tuned is enabled. Offline: one result per device class."
        ),
    )]
