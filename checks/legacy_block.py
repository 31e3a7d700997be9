"""``block.scheduler`` and ``block.read_ahead``: I/O scheduler and read-ahead per disk.

Live, one result per whole disk from ``/sys/block`` (NVMe namespaces ``nvme<S>n<N>``, SATA/SAS
SSDs and rotational disks told apart by ``queue/rotational``; hidden NVMe multipath paths
``nvme<S>c<C>n<N>``, partitions, loop, zram, dm and md devices are not audited).  The value
at the next boot is what the kernel picks (block/elevator.c ``elevator_get_default``: no
elevator for multi-queue devices, ``mq-deadline`` for single-queue ones; read-ahead 128 KB,
``VM_READAHEAD_PAGES``), then what udev rules write (``ATTR{queue/scheduler}=``; see
:mod:`aiaudit.linux.udev.files`), then tuned's ``[disk]`` plugin (it runs after udev coldplug).
Offline there are no devices: one result per device class, evaluated for a representative
device name (``nvme0n1``, ``sda``).  ``elevator=`` on the command line is ignored by blk-mq
kernels (block/elevator.c, since 5.0) and is not considered.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any, Callable, Iterator, Mapping

from aiaudit.api import (
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.parsing import MAX_INT_DIGITS
from aiaudit.core.records import record
from aiaudit.core.verdict import verdict
from aiaudit.linux import sysfs
from aiaudit.linux.sysfs import read_opt
from aiaudit.linux.tuned import profiles as tuned
from aiaudit.linux.udev import files as udev
from aiaudit.linux.udev import rules as up

CLASSES = ("nvme", "ssd", "hdd")
CLASS_TEXT = {"nvme": "NVMe namespace", "ssd": "non-rotational SATA/SAS/virtio disk",
              "hdd": "rotational disk"}
REPRESENTATIVE = {"nvme": "nvme0n1", "ssd": "sda", "hdd": "sda"}
UDEV_MATCH = {
    "nvme": 'SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="nvme[0-9]*n[0-9]*"',
    "ssd": 'SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="sd[a-z]*|vd[a-z]*", '
           'ATTR{queue/rotational}=="0"',
    "hdd": 'SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", KERNEL=="sd[a-z]*|vd[a-z]*", '
           'ATTR{queue/rotational}=="1"',
}
RULES_FILE = "/etc/udev/rules.d/99-zz-aiaudit-block.rules"
"""Remediation rules file: in /etc and sorting last, so its write is the last one."""

NVME_NS = re.compile(r"nvme\d+n\d+")
NVME_PATH = re.compile(r"nvme\d+c\d+n\d+")
VIRTUAL = re.compile(r"(loop|ram|zram|dm-|md|nbd|sr|drbd|rbd|fd|mtdblock|ublkb)")
DEFAULT_RA_KB = 128
"""``VM_READAHEAD_PAGES`` (include/linux/mm.h): 128 KiB, raised to ``2*io_opt`` by some
drivers (block/blk-settings.c)."""

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


# ------------------------------------------------------------------ devices
@record
class Disk:
    """A whole disk (live) or a device class representative (offline)."""

    name: str
    cls: str
    subject: str
    sysdir: str | None
    """``/sys/block/<name>`` when live."""
    attrs: Mapping[str, str] = field(default_factory=dict)


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

    def __iter__(self):  # pragma: no cover - udev matching only uses lookups
        return iter(())

    def __len__(self) -> int:  # pragma: no cover
        return 0



def live_disks(host: Host) -> tuple[list[Disk], list[str]]:
    """Audited disks in ``/sys/block`` and notes on what was left out (memoized)."""
    return host.memo(("block-disks",), lambda: _live_disks(host))


def _live_disks(host: Host) -> tuple[list[Disk], list[str]]:
    disks: list[Disk] = []
    left: list[str] = []
    for name in host.listdir("/sys/block"):
        d = f"/sys/block/{name}"
        if NVME_PATH.fullmatch(name) or read_opt(host, f"{d}/hidden") == "1":
            left.append(f"{name} (hidden multipath path)")
            continue
        if VIRTUAL.match(name):
            left.append(f"{name} (virtual/stacked)")
            continue
        if not host.exists(f"{d}/queue/scheduler"):
            left.append(f"{name} (no queue)")
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


# ------------------------------------------------------------------ boot value
@record
class Boot:
    """What the next boot sets for one attribute of one disk."""

    value: str | None
    source: str
    """Human text: ``udev etc/udev/rules.d/60-x.rules:3`` or ``kernel default``."""
    explicit: bool
    evidence: tuple[Evidence, ...] = ()
    undecided: tuple[str, ...] = ()
    """Rules that may also write it but whose match cannot be decided."""
    undecided_values: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def _tuned_disk(host: Host, name: str, key: str) -> tuple[str, str, int] | None:
    """(value, file, line) of tuned ``[disk] key`` applying to ``name``."""
    st = tuned.load(host)
    if not st.active or st.profile is None:
        return None
    found = None
    for unit in st.profile.units.values():
        if unit.type != "disk" or not unit.enabled or key not in unit.options:
            continue
        devs = unit.options.get("devices")
        if devs is not None and not _tuned_devices_match(devs.value, name):
            continue
        o = unit.options[key]
        found = (o.value, o.file, o.line)
    return found


def _tuned_devices_match(spec: str, name: str) -> bool:
    """tuned ``devices=`` (comma-separated globs, ``!`` negates; tuned/utils/commands.py
    ``devstr2devs`` + plugins/base.py)."""
    import fnmatch

    pos = [p.strip() for p in spec.split(",") if p.strip() and not p.strip().startswith("!")]
    neg = [p.strip()[1:] for p in spec.split(",") if p.strip().startswith("!")]
    if any(fnmatch.fnmatchcase(name, n) for n in neg):
        return False
    return not pos or any(fnmatch.fnmatchcase(name, p) for p in pos)


def boot_value(host: Host, disk: Disk, attrs: tuple[str, ...], default: str | None,
               default_why: str, tuned_key: str,
               tuned_map: Callable[[str], str | None] = lambda v: v) -> Boot:
    """The value of sysfs attribute ``attrs[0]`` (aliases after it) at the next boot."""
    rules = udev.load(host, attrs)
    dev = up.Device(disk.name, attrs=disk.attrs)
    writes: list[up.AttrWrite] = []
    for attr in attrs:
        writes += up.attr_writes(rules.rules, dev, attr)
    order = {id(r): i for i, r in enumerate(rules.rules)}
    writes.sort(key=lambda w: order.get(id(w.rule), 0))
    last, doubt = up.effective(writes)
    ev: list[Evidence] = []
    if last is not None:
        value, explicit = last.value, True
        source = f"udev {last.rule.file.lstrip('/')}:{last.rule.line}"
        ev.append(Evidence.file(last.rule.file, last.rule.line, last.rule.raw))
    else:
        value, explicit, source = default, False, default_why
        ev.append(Evidence.default(default_why, default))
    t = _tuned_disk(host, disk.name, tuned_key)
    if t is not None:
        mapped = tuned_map(t[0])
        if mapped is not None:
            value, explicit = mapped, True
            source = f"tuned [disk] {tuned_key}={t[0]} ({t[1].lstrip('/')}:{t[2]})"
            ev.append(Evidence.file(t[1], t[2], f"{tuned_key}={t[0]}"))
            doubt = []
    und = tuple(f"{w.rule.file.lstrip('/')}:{w.rule.line} may set {w.value} ({w.why})"
                for w in doubt)
    for w in doubt:
        ev.append(Evidence.file(w.rule.file, w.rule.line, w.rule.raw))
    return Boot(value, source, explicit, tuple(ev), und, tuple(w.value for w in doubt),
                rules.problems)


# ------------------------------------------------------------------ shared driver
def _evaluate(ctx: CheckContext, *, what: str, attr: str, read: Callable[[Disk], str | None],
              ok: Callable[[Disk, str], bool], want: Callable[[Disk], str],
              boot: Callable[[Disk], Boot], fix: Callable[[Disk], str | None],
              skip: Callable[[Disk, str], str | None]) -> Iterator[Result]:
    host, p = ctx.host, ctx.params
    classes = list(p.get("classes") or CLASSES)
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
            yield from _one(ctx, disk, what=what, attr=attr, read=read, ok=ok, want=want,
                            boot=boot, fix=fix, skip=skip)
        except (HostError, ParseError) as exc:
            yield Result(Status.ERROR, disk.subject, f"{what} of {disk.name}: {exc}")


def _one(ctx: CheckContext, disk: Disk, *, what: str, attr: str,
         read: Callable[[Disk], str | None], ok: Callable[[Disk, str], bool],
         want: Callable[[Disk], str], boot: Callable[[Disk], Boot],
         fix: Callable[[Disk], str | None], skip: Callable[[Disk, str], str | None]
         ) -> Iterator[Result]:
    host, p = ctx.host, ctx.params
    label = f"{what} of {disk.name}" if host.live else \
        f"{what} of {CLASS_TEXT[disk.cls]}s (as for {disk.name})"
    evidence: list[Evidence] = []
    runtime = None
    if host.live:
        assert disk.sysdir is not None
        path = f"{disk.sysdir}/{attr}"
        runtime = read(disk)
        if runtime is None:
            yield Result(Status.ERROR, disk.subject, f"{path} cannot be read or parsed",
                         evidence=(Evidence.runtime(path),))
            return
        reason = skip(disk, runtime)
        if reason:
            yield Result(Status.SKIP, disk.subject, reason,
                         evidence=(Evidence.runtime(path, runtime),))
            return
        evidence.append(Evidence.runtime(path, runtime))
    b = boot(disk)
    evidence += b.evidence
    w = want(disk)
    boot_ok: bool | None = None if b.value is None else ok(disk, b.value)
    if b.undecided and boot_ok is not None:
        if any(ok(disk, v) != boot_ok for v in b.undecided_values):
            boot_ok = None
    boot_txt = f"{b.value if b.value is not None else 'unknown'} ({b.source})"
    if b.undecided:
        boot_txt += "; undecided offline: " + "; ".join(b.undecided)
    data = {"class": disk.cls, "runtime": runtime, "boot": b.value, "boot_source": b.source}
    if b.problems:
        yield Result(Status.ERROR, disk.subject,
                     f"{label}: udev rules cannot be read: {'; '.join(b.problems)}",
                     expected=w, actual=runtime, evidence=tuple(evidence), data=data)
        return
    if b.undecided and boot_ok is None and not (host.live and runtime is not None
                                                 and ok(disk, runtime)):
        yield Result(Status.ERROR, disk.subject,
                     f"{label}: the boot value cannot be decided: {boot_txt}",
                     expected=w, actual=runtime, evidence=tuple(evidence), data=data)
        return
    rt_ok = None if runtime is None else ok(disk, runtime)
    if host.live and not p.get("persist", True) and rt_ok:
        boot_ok = True
    status, aspect, msg = verdict(host.live, rt_ok, boot_ok, boot_set=b.explicit, what=label,
                                  runtime_txt=str(runtime), boot_txt=boot_txt, want=w)
    rem = None
    if status is Status.FAIL:
        rem = _remediation(host, disk, what, attr, fix(disk), b)
    yield Result(status, disk.subject, msg, expected=w, actual=runtime or b.value,
                 aspect=aspect, evidence=tuple(evidence), remediation=rem, data=data)


def _remediation(host: Host, disk: Disk, what: str, attr: str, value: str | None,
                 b: Boot) -> Remediation:
    if value is None:
        return Remediation(f"Set {what} of {disk.name} to an allowed value.")
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


# ------------------------------------------------------------------ scheduler
def _nr_hw_queues(host: Host, disk: Disk) -> int | None:
    if disk.sysdir is None:
        return None
    try:
        return len([n for n in host.listdir(f"{disk.sysdir}/mq") if n.isdigit()]) or None
    except HostError:
        return None


def _sched_default(host: Host, disk: Disk) -> tuple[str, str]:
    """block/elevator.c ``elevator_get_default``: no elevator when the device has more than
    one hardware queue, else mq-deadline."""
    n = _nr_hw_queues(host, disk)
    if n is not None:
        v = "none" if n > 1 else "mq-deadline"
        return v, f"kernel default for a blk-mq device with {n} hardware queue(s)"
    if disk.cls == "nvme":
        return "none", "kernel default for multi-queue NVMe (assumed: more than one queue)"
    return "mq-deadline", "kernel default for a single-queue disk"


def run_scheduler(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the I/O scheduler rule."""
    host, p = ctx.host, ctx.params

    def allowed(disk: Disk) -> list[str]:
        return list(p.get(disk.cls) or [])

    def read(disk: Disk) -> str | None:
        assert disk.sysdir
        text = read_opt(host, f"{disk.sysdir}/queue/scheduler")
        if text is None:
            return None
        try:
            ch = sysfs.parse_choice(text)
        except ParseError:
            return None
        return ch.active if ch.active is not None else f"({text.strip()})"

    def skip(disk: Disk, value: str) -> str | None:
        if value.startswith("("):
            return (f"{disk.name} cannot have an I/O scheduler (bio-based queue: scheduler "
                    f"file reads {value[1:-1]!r})")
        return None

    def boot(disk: Disk) -> Boot:
        d, why = _sched_default(host, disk)
        return boot_value(host, disk, ("queue/scheduler",), d, why, "elevator")

    return _evaluate(ctx, what="I/O scheduler", attr="queue/scheduler", read=read,
                     ok=lambda d, v: v in allowed(d),
                     want=lambda d: "one of " + ", ".join(allowed(d)), boot=boot,
                     fix=lambda d: allowed(d)[0], skip=skip)


# ------------------------------------------------------------------ read-ahead
def _tuned_ra(value: str) -> str | None:
    """tuned plugin_disk ``_parse_ra``: KB, ``s`` suffix = 512-byte sectors; a leading
    ``>`` (only raise) is kept as the number."""
    v = value.strip().lstrip(">").strip()
    parts = v.split(None, 1)
    if not parts or not parts[0].isdigit() or len(parts[0]) > MAX_INT_DIGITS:
        return None
    n = int(parts[0])
    if len(parts) > 1 and parts[1].startswith("s"):
        n //= 2
    return str(n)


def run_read_ahead(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the read-ahead rule."""
    host, p = ctx.host, ctx.params
    lo, hi = int(p.get("min_kb", 128)), p.get("max_kb")

    def ok(_d: Disk, v: str) -> bool:
        try:
            n = int(v)
        except ValueError:
            return False
        return n >= lo and (hi is None or n <= int(hi))

    def read(disk: Disk) -> str | None:
        assert disk.sysdir
        v = read_opt(host, f"{disk.sysdir}/queue/read_ahead_kb")
        return v if v is not None and v.isdigit() else None

    want = f">= {lo} KB" + (f" and <= {hi} KB" if hi is not None else "")
    return _evaluate(
        ctx, what="read-ahead (KB)", attr="queue/read_ahead_kb", read=read, ok=ok,
        want=lambda d: want,
        boot=lambda d: boot_value(host, d, ("queue/read_ahead_kb", "bdi/read_ahead_kb"),
                                  str(DEFAULT_RA_KB), "kernel default (VM_READAHEAD_PAGES)",
                                  "readahead", _tuned_ra),
        fix=lambda d: str(max(lo, DEFAULT_RA_KB) if hi is None
                          else min(max(lo, DEFAULT_RA_KB), int(hi))),
        skip=lambda d, v: None)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``block.scheduler`` and ``block.read_ahead``."""
    return [
        CheckSpec(
            id="block.scheduler",
            title="Each disk uses the I/O scheduler expected for its class, now and at boot",
            run=run_scheduler,
            params_schema=SCHED_SCHEMA,
            description=(
                "Live: /sys/block/<disk>/queue/scheduler of every NVMe namespace and SATA/SAS/"
                "virtio disk (hidden NVMe paths, partitions, loop/dm/md/zram skipped). Boot: "
                "the kernel default (none for multi-queue, mq-deadline for single-queue), "
                "then udev ATTR{queue/scheduler} writes (rules dirs, same-name override, "
                "lexical order, GOTO/LABEL, undecidable matches reported), then tuned "
                "[disk] elevator when tuned is enabled. Offline: one result per device class."
            ),
        ),
        CheckSpec(
            id="block.read_ahead",
            title="Disk read-ahead is within bounds, now and at boot",
            run=run_read_ahead,
            params_schema=RA_SCHEMA,
            description=(
                "Live: /sys/block/<disk>/queue/read_ahead_kb. Boot: kernel default 128 KB, "
                "udev ATTR{queue/read_ahead_kb} or ATTR{bdi/read_ahead_kb} writes, tuned "
                "[disk] readahead. Offline: one result per device class."
            ),
        ),
    ]
