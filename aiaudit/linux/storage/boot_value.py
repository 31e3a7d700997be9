"""What the next boot writes to a queue attribute of a disk (``queue/scheduler``,
``queue/read_ahead_kb``).

In order, later wins: the kernel's default (:mod:`aiaudit.linux.storage.disks`), then the
``ATTR{...}=`` writes of the udev rules replayed at boot by ``systemd-udev-trigger``
(:mod:`aiaudit.linux.udev.files`, :func:`aiaudit.linux.udev.rules.attr_writes`), then
tuned's ``[disk]`` plugin, which runs after udev coldplug (:mod:`aiaudit.linux.tuned.disk`).
A udev rule whose match cannot be decided here is reported with the value it may write.
``elevator=`` on the command line is ignored by blk-mq kernels (block/elevator.c, since 5.0)
and is not considered.
"""

from __future__ import annotations

from typing import Callable

from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.storage.disks import Disk
from aiaudit.linux.tuned import disk as tuned_disk
from aiaudit.linux.udev import files as udev
from aiaudit.linux.udev import rules as up


@record
class Boot:
    """What the next boot sets for one attribute of one disk."""

    value: str | None
    source: str
    """Human text: ``udev etc/udev/rules.d/60-x.rules:3`` or ``kernel default``."""
    explicit: bool
    """True when configuration (udev, tuned), not the kernel default, decides."""
    evidence: tuple[Evidence, ...] = ()
    undecided: tuple[str, ...] = ()
    """Rules that may also write it but whose match cannot be decided."""
    undecided_values: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    """Rules files that could not be read."""


def udev_writes(host: Host, disk: Disk, attrs: tuple[str, ...], action: str = "add"
                ) -> tuple[up.AttrWrite | None, list[up.AttrWrite], tuple[str, ...]]:
    """(last certain write, undecided writes after it, unreadable rules files) of the
    attribute ``attrs[0]`` (aliases after it) for ``disk``, in udev's rule order, for an
    ``action`` event (``add``: the coldplug at boot)."""
    rules = udev.load(host, attrs)
    dev = up.Device(disk.name, attrs=disk.attrs, action=action)
    writes: list[up.AttrWrite] = []
    for attr in attrs:
        writes += up.attr_writes(rules.rules, dev, attr)
    order = {id(r): i for i, r in enumerate(rules.rules)}
    writes.sort(key=lambda w: order.get(id(w.rule), 0))
    last, doubt = up.effective(writes)
    return last, doubt, rules.problems


def boot_value(host: Host, disk: Disk, attrs: tuple[str, ...], default: str | None,
               default_why: str, tuned_key: str,
               tuned_map: Callable[[str], str | None] = lambda v: v) -> Boot:
    """The value of sysfs attribute ``attrs[0]`` (aliases after it) at the next boot;
    ``tuned_map`` turns tuned's ``[disk] tuned_key`` value into the attribute's (``None``:
    tuned's value is not understood and does not count)."""
    last, doubt, problems = udev_writes(host, disk, attrs)
    ev: list[Evidence] = []
    value: str | None
    if last is not None:
        value, explicit = last.value, True
        source = f"udev {last.rule.file.lstrip('/')}:{last.rule.line}"
        ev.append(Evidence.file(last.rule.file, last.rule.line, last.rule.raw))
    else:
        value, explicit, source = default, False, default_why
        ev.append(Evidence.default(default_why, default))
    t = tuned_disk.disk_option(host, disk.name, tuned_key)
    mapped = tuned_map(t.value) if t is not None else None
    if t is not None and mapped is not None:
        value, explicit = mapped, True
        source = f"tuned [disk] {tuned_key}={t.value} ({t.file.lstrip('/')}:{t.line})"
        ev.append(Evidence.file(t.file, t.line, f"{tuned_key}={t.value}"))
        doubt = []
    und = tuple(f"{w.rule.file.lstrip('/')}:{w.rule.line} may set {w.value} ({w.why})"
                for w in doubt)
    ev += [Evidence.file(w.rule.file, w.rule.line, w.rule.raw) for w in doubt]
    return Boot(value, source, explicit, tuple(ev), und, tuple(w.value for w in doubt),
                problems)


def trigger_action(host: Host, disk: Disk, attrs: tuple[str, ...], value: str) -> str:
    """The ``udevadm trigger --action`` that makes the rules write ``value`` again:
    ``change`` (the usual, and udevadm's default) when a change event writes it as the
    boot's ``add`` does, else ``add`` (a rule limited to ``ACTION=="add"``), as
    systemd-udev-trigger replays it at boot."""
    last, _, _ = udev_writes(host, disk, attrs, "change")
    return "change" if last is not None and last.value == value else "add"
