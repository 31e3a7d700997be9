"""One queue attribute (``queue/scheduler``, ``queue/read_ahead_kb``) of every audited disk,
now and at the next boot: the flow ``block.scheduler`` and ``block.read_ahead`` share.

Gather: the audited disks (:mod:`aiaudit.linux.storage.disks`), the live value from sysfs,
the boot value (:mod:`aiaudit.linux.storage.boot_value`).  Decide: :func:`decide` (an
unreadable rules file or an undecidable rule that could change the answer is an error;
otherwise :func:`aiaudit.core.verdict.verdict`).  Results: one per disk (live) or device
class (offline), with a udev rule as the fix (and tuned named when it writes the attribute
after udev).
"""

from __future__ import annotations

from typing import Callable, Iterator

from aiaudit.api import CheckContext
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Evidence, Remediation, Result, Snippet, Status
from aiaudit.core.startup.records import record
from aiaudit.core.verdict import verdict
from aiaudit.linux.storage.boot_value import Boot
from aiaudit.linux.storage.disks import CLASS_TEXT, CLASSES, Disk, live_disks, offline_disks

UDEV_MATCH = {
    "nvme": 'SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="nvme[0-9]*n[0-9]*"',
    "ssd": 'SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="sd[a-z]*|vd[a-z]*", '
           'ATTR{queue/rotational}=="0"',
    "hdd": 'SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="sd[a-z]*|vd[a-z]*", '
           'ATTR{queue/rotational}=="1"',
}
"""udev matches of each device class, for the remediation rule."""
RULES_FILE = "/etc/udev/rules.d/99-zz-aiaudit-block.rules"
"""Remediation rules file: in /etc and sorting last, so its write is the last one."""


def _never(_disk: Disk, _value: str) -> str | None:
    return None


@record
class QueueAttr:
    """How one check reads, judges, persists and fixes its queue attribute."""

    what: str
    """Display name (``I/O scheduler``)."""
    attr: str
    """Attribute under ``/sys/block/<disk>/`` (``queue/scheduler``)."""
    read: Callable[[Disk], str | None]
    """The live value (``None``: unreadable or unparsable)."""
    ok: Callable[[Disk, str], bool]
    want: Callable[[Disk], str]
    """The expectation, in display form."""
    boot: Callable[[Disk], Boot]
    fix: Callable[[Disk], str | None]
    """The value a fix writes (``None``: no single right value)."""
    skip: Callable[[Disk, str], str | None] = _never
    """Why a disk with this live value is not applicable (``None``: it is)."""


@record
class Decision:
    """The status of one disk's attribute, with its aspect and message."""

    status: Status
    aspect: Aspect | None
    message: str


def evaluate(ctx: CheckContext, spec: QueueAttr) -> Iterator[Result]:
    """Results of ``spec`` for every audited disk of the classes in ``ctx.params``."""
    host = ctx.host
    classes = list(ctx.params.get("classes") or CLASSES)
    if host.live:
        disks, left = live_disks(host)
        disks = [d for d in disks if d.cls in classes]
        if not disks:
            extra = f"; not audited: {', '.join(left)}" if left else ""
            yield Result(Status.SKIP, "block", f"no {'/'.join(classes)} disks in /sys/block"
                         f"{extra}", evidence=(Evidence.runtime("/sys/block"),))
            return
    else:
        disks = offline_disks(classes)
    for disk in disks:
        try:
            yield _disk_result(ctx, disk, spec)
        except (HostError, ParseError) as exc:
            yield Result(Status.ERROR, disk.subject, f"{spec.what} of {disk.name}: {exc}")


def label(spec: QueueAttr, disk: Disk, live: bool) -> str:
    """``I/O scheduler of nvme0n1`` live, ``... of NVMe namespaces (as for nvme0n1)``
    offline."""
    if live:
        return f"{spec.what} of {disk.name}"
    return f"{spec.what} of {CLASS_TEXT[disk.cls]}s (as for {disk.name})"


def _disk_result(ctx: CheckContext, disk: Disk, spec: QueueAttr) -> Result:
    """Gather the live and boot values of one disk, decide, build its result."""
    host = ctx.host
    evidence: list[Evidence] = []
    runtime = None
    if host.live:
        assert disk.sysdir is not None
        path = f"{disk.sysdir}/{spec.attr}"
        runtime = spec.read(disk)
        if runtime is None:
            return Result(Status.ERROR, disk.subject, f"{path} cannot be read or parsed",
                          evidence=(Evidence.runtime(path),))
        reason = spec.skip(disk, runtime)
        if reason:
            return Result(Status.SKIP, disk.subject, reason,
                          evidence=(Evidence.runtime(path, runtime),))
        evidence.append(Evidence.runtime(path, runtime))
    b = spec.boot(disk)
    evidence += b.evidence
    d = decide(spec, disk, runtime, b, live=host.live,
               persist=bool(ctx.params.get("persist", True)))
    data = {"class": disk.cls, "runtime": runtime, "boot": b.value, "boot_source": b.source}
    if d.status is Status.ERROR:
        return Result(d.status, disk.subject, d.message, expected=spec.want(disk),
                      actual=runtime, evidence=tuple(evidence), data=data)
    rem = remediation(host, disk, spec, b) if d.status is Status.FAIL else None
    if d.status is Status.FAIL and runtime is not None and not spec.ok(disk, runtime) and \
            boot_right(spec, disk, b):  # only the running value is wrong: apply the boot's
        rem = apply_boot(host, disk, spec, b)
    return Result(d.status, disk.subject, d.message, expected=spec.want(disk),
                  actual=runtime or b.value, aspect=d.aspect, evidence=tuple(evidence),
                  remediation=rem, data=data)


def boot_text(b: Boot) -> str:
    """``none (kernel default ...)``, with the undecidable rules after it."""
    text = f"{b.value if b.value is not None else 'unknown'} ({b.source})"
    if b.undecided:
        text += "; undecided offline: " + "; ".join(b.undecided)
    return text


def decide(spec: QueueAttr, disk: Disk, runtime: str | None, b: Boot, *, live: bool,
           persist: bool) -> Decision:
    """The status of one disk: an error when rules files cannot be read or an undecidable
    rule could change the boot value (unless the live value is right), else the verdict on
    the live value (``None`` offline) and the boot value.  Without ``persist`` a right live
    value is enough."""
    what, w = label(spec, disk, live), spec.want(disk)
    boot_ok: bool | None = None if b.value is None else spec.ok(disk, b.value)
    if b.undecided and boot_ok is not None and \
            any(spec.ok(disk, v) != boot_ok for v in b.undecided_values):
        boot_ok = None
    if b.problems:
        return Decision(Status.ERROR, None,
                        f"{what}: udev rules cannot be read: {'; '.join(b.problems)}")
    rt_ok = None if runtime is None else spec.ok(disk, runtime)
    if b.undecided and boot_ok is None and not (live and rt_ok):
        return Decision(Status.ERROR, None,
                        f"{what}: the boot value cannot be decided: {boot_text(b)}")
    if live and not persist and rt_ok:
        boot_ok = True
    status, aspect, msg = verdict(live, rt_ok, boot_ok, boot_set=b.explicit, what=what,
                                  runtime_txt=str(runtime), boot_txt=boot_text(b), want=w)
    return Decision(status, aspect, msg)


def boot_right(spec: QueueAttr, disk: Disk, b: Boot) -> bool:
    """Whether the boot writes a right value, whatever the undecided rules do."""
    return b.value is not None and spec.ok(disk, b.value) and \
        all(spec.ok(disk, v) for v in b.undecided_values)


def apply_boot(host: Host, disk: Disk, spec: QueueAttr, b: Boot) -> Remediation:
    """The fix for drift (the boot value is right, the running one is not): what writes it
    at boot, again: tuned re-applies its profile when restarted; a udev rule is replayed
    for the disk with ``udevadm trigger`` (after a reload, in case the rule is newer than
    udevd's copy); the kernel default is written through sysfs.  No rule to add."""
    from aiaudit.linux.storage.boot_value import trigger_action

    attr, sysdir = spec.attr, f"/sys/block/{disk.name}"
    if b.source.startswith("tuned"):
        cmd, what = "systemctl restart tuned.service", "tuned re-applies its [disk] settings"
    elif b.explicit and b.value is not None:
        act = trigger_action(host, disk, (attr,), b.value)
        cmd = f"udevadm control --reload && udevadm trigger --action={act} {sysdir}"
        what = f"replay the udev rules for {disk.name} (they write {attr})"
    else:
        cmd, what = f"echo {b.value} > {sysdir}/{attr}", "write the boot value now"
    return Remediation(f"Apply the boot value {attr} = {b.value} to {disk.name} "
                       f"({b.source}, already right): `{cmd}`.", (Snippet.command(cmd, what),))


def remediation(host: Host, disk: Disk, spec: QueueAttr, b: Boot) -> Remediation:
    """A udev rule for the disk's class and a sysfs write now (live) or a udev trigger
    (offline); tuned, when it writes the attribute after udev, is left to a person."""
    value = spec.fix(disk)
    if value is None:
        return Remediation(f"Set {spec.what} of {disk.name} to an allowed value.")
    attr = spec.attr
    snips = [Snippet.file(RULES_FILE,
                          f'ACTION=="add|change", {UDEV_MATCH[disk.cls]}, '
                          f'ATTR{{{attr}}}="{value}"\n',
                          f"set {attr} for every {CLASS_TEXT[disk.cls]} at boot and hotplug")]
    if host.live:
        snips.append(Snippet.command(f"echo {value} > /sys/block/{disk.name}/{attr}",
                                     f"apply it to {disk.name} now"))
    else:
        snips.append(Snippet.command(
            "udevadm control --reload && udevadm trigger --action=change "
            "--subsystem-match=block", "apply the rule to present disks"))
    manual = ""
    if b.source.startswith("tuned"):
        # tuned writes the attribute after udev: the udev rule alone cannot win
        manual = (f"tuned sets {attr} after udev ({b.source}): remove or change that "
                  "setting in the tuned profile (it applies to all disks).")
    return Remediation(f"Set {attr} = {value} for {CLASS_TEXT[disk.cls]}s with a udev rule "
                       f"in {RULES_FILE}, and now through sysfs.", tuple(snips),
                       manual=manual)
