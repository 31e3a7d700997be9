"""``block.read_ahead``: disk read-ahead is within bounds, now and at boot.

Live, one result per whole disk from ``/sys/block`` (:mod:`aiaudit.linux.storage.disks`):
``queue/read_ahead_kb`` (Documentation/ABI/stable/sysfs-block).  Offline, one result per
device class.

At boot (:mod:`aiaudit.linux.storage.boot_value`): the kernel default of 128 KB
(``VM_READAHEAD_PAGES``, include/linux/mm.h), then udev ``ATTR{queue/read_ahead_kb}=`` or
``ATTR{bdi/read_ahead_kb}=`` writes, then tuned ``[disk] readahead`` (KB; ``s`` suffix:
512-byte sectors, tuned plugin_disk ``_parse_ra``).

Decide: :func:`aiaudit.linux.storage.queue_rule.decide`.
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.api import CheckContext, CheckSpec, Result, hookimpl
from aiaudit.linux.storage import queue_rule
from aiaudit.linux.storage.boot_value import boot_value
from aiaudit.linux.storage.disks import CLASSES, DEFAULT_RA_KB, Disk
from aiaudit.linux.sysfs import read_opt
from aiaudit.linux.tuned.disk import parse_readahead

ATTRS = ("queue/read_ahead_kb", "bdi/read_ahead_kb")
"""The attribute and its alias (the same value through the backing device)."""
RA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "min_kb": {"type": "integer", "minimum": 0, "default": 128},
        "max_kb": {"type": ["integer", "null"], "minimum": 0, "default": None},
        "classes": {"type": "array", "items": {"enum": list(CLASSES)}, "uniqueItems": True,
                    "default": list(CLASSES)},
        "persist": {"type": "boolean", "default": True},
    },
}


def within(value: str, lo: int, hi: int | None) -> bool:
    """Whether ``value`` (KB as text) is in ``[lo, hi]`` (``hi`` ``None``: no upper
    bound)."""
    try:
        n = int(value)
    except ValueError:
        return False
    return n >= lo and (hi is None or n <= hi)


def fix_value(lo: int, hi: int | None) -> str:
    """The value a fix writes: the kernel default, moved into the bounds."""
    return str(max(lo, DEFAULT_RA_KB) if hi is None else min(max(lo, DEFAULT_RA_KB), hi))


def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the read-ahead rule for every audited disk."""
    host, p = ctx.host, ctx.params
    lo, hi_param = int(p.get("min_kb", 128)), p.get("max_kb")
    hi = None if hi_param is None else int(hi_param)

    def read(disk: Disk) -> str | None:
        assert disk.sysdir
        v = read_opt(host, f"{disk.sysdir}/{ATTRS[0]}")
        return v if v is not None and v.isdigit() else None

    want = f">= {lo} KB" + (f" and <= {hi_param} KB" if hi_param is not None else "")
    return queue_rule.evaluate(ctx, queue_rule.QueueAttr(
        what="read-ahead (KB)", attr=ATTRS[0], read=read,
        ok=lambda _d, v: within(v, lo, hi), want=lambda _d: want,
        boot=lambda d: boot_value(host, d, ATTRS, str(DEFAULT_RA_KB),
                                  "kernel default (VM_READAHEAD_PAGES)", "readahead",
                                  parse_readahead),
        fix=lambda _d: fix_value(lo, hi)))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``block.read_ahead``."""
    return [CheckSpec(
        id="block.read_ahead",
        title="Disk read-ahead is within bounds, now and at boot",
        run=run,
        params_schema=RA_SCHEMA,
        description=(
            "Live: /sys/block/<disk>/queue/read_ahead_kb. Boot: kernel default 128 KB, "
            "udev ATTR{queue/read_ahead_kb} or ATTR{bdi/read_ahead_kb} writes, tuned "
            "[disk] readahead. Offline: one result per device class."
        ),
    )]
