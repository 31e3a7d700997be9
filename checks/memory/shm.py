"""``memory.shm``: ``/dev/shm`` is large enough for DataLoader workers, now and at boot.

PyTorch DataLoader workers pass tensors through ``/dev/shm``.  Live: the last ``/dev/shm``
line of ``/proc/mounts`` (tmpfs shows ``size=`` only when it is not the default of half the
RAM; ``size=0`` = unlimited; mm/shmem.c ``shmem_show_options``), compared with ``MemTotal``
for a percentage.  At boot: the ``/etc/fstab`` entry, else systemd's default mount (half the
RAM).  Offline a percentage cannot be compared with a size in bytes (the RAM is unknown): an
error says so.

Gather and decide: :mod:`aiaudit.linux.storage.shm`, :func:`aiaudit.core.verdict.verdict`.
The fix edits the ``/dev/shm`` line of ``/etc/fstab`` in place (it is not a drop-in); where
the boot mount is right and only the mounted size is not, it remounts with the boot's size
(:func:`apply_boot`) and edits nothing.
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.api import (
    Aspect,
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
from aiaudit.core.verdict import verdict
from aiaudit.linux import sysfs
from aiaudit.linux.storage import fstab, shm
from aiaudit.linux.sysfs import Size

FSTAB = "/etc/fstab"
SHM_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "min_size": {"type": "string", "pattern": r"^\d+(\.\d+)?%$|^\d+[kKmMgGtT]?$",
                     "default": "50%",
                     "description": "smallest acceptable /dev/shm: 16G or 40% (of RAM)"},
        "persist": {"type": "boolean", "default": True},
    },
}


def _runtime(host: Host, minimum: Size) -> tuple[bool | None, str, int | None, Evidence]:
    """(large enough now, its text, the RAM in bytes, the /proc/mounts evidence)."""
    ram = shm.ram_bytes(host)
    m = shm.mounted(host)
    if m is None or m.fstype != "tmpfs":
        ok: bool | None = False
        text = "not a tmpfs mount" if m is not None else "not mounted"
    else:
        size = shm.tmpfs_size(m)
        ok, text = shm.at_least(size, minimum, ram), shm.size_text(size, ram)
    return ok, text, ram, Evidence.runtime("/proc/mounts", m.raw.strip() if m else None)


def _remediation(minimum: Size, entry: fstab.Mount | None) -> Remediation:
    """Make the fstab line mount /dev/shm with the minimum size, and remount it now."""
    from aiaudit.core import edits  # the fix's edit script: only for a failure

    size = str(minimum) if minimum.percent is None else f"{minimum.percent:g}%"
    line = f"tmpfs /dev/shm tmpfs rw,nosuid,nodev,size={size} 0 0\n"
    where = (f" (replace {FSTAB.lstrip('/')}:{entry.line})" if entry is not None else "")
    # /etc/fstab is not a drop-in: the fix edits it in place instead of replacing it
    return Remediation(f"Mount /dev/shm with size={size} from /etc/fstab{where}: "
                       f"`{line.strip()}`, and remount it now. In containers, raise "
                       "--shm-size instead.", (
                           Snippet.edit(FSTAB, edits.SET_MOUNT + " " + line.strip(),
                                        "make it the /dev/shm line of /etc/fstab"),
                           Snippet.command(f"mount -o remount,size={size} /dev/shm",
                                           "resize now")))


def apply_boot(entry: fstab.Mount | None, mounted: bool) -> Remediation:
    """The fix for drift (the boot mount is large enough, the mounted /dev/shm is not):
    mount or remount it with the size the boot gives it, nothing to edit.  util-linux
    ``mount -o remount /dev/shm`` merges the fstab line's options with the command line's
    (mount(8) "remount"); the size is given explicitly too, because a remount without
    ``size=`` keeps the current size (mm/shmem.c ``shmem_reconfigure``).  Both checked with
    util-linux 2.38.1 ``mount -T FSTAB -o remount`` on a tmpfs."""
    if entry is None:
        where, opt = "the systemd default mount, half of RAM", "size=50%"
        mount = "mount -t tmpfs -o rw,nosuid,nodev,mode=1777 tmpfs /dev/shm"
    else:
        where = f"{FSTAB.lstrip('/')}:{entry.line}"
        nr = entry.option("nr_blocks")
        opt = (f"size={entry.option('size')}" if entry.option("size")
               else f"nr_blocks={nr}" if nr else "size=50%")
        mount = "mount /dev/shm"
    if not mounted:
        return Remediation(f"Mount /dev/shm as at boot ({where}); the boot configuration is "
                           "already right.", (Snippet.command(mount, "mount it as at boot"),))
    return Remediation(f"Remount /dev/shm with the size the boot gives it ({opt}, {where}); "
                       "the boot configuration is already right.",
                       (Snippet.command(f"mount -o remount,{opt} /dev/shm",
                                        "resize it as at boot"),))


def run(ctx: CheckContext) -> Iterator[Result]:
    """Evaluate the /dev/shm size rule: gather the live mount and the fstab entry, decide,
    report."""
    host, p = ctx.host, ctx.params
    minimum = sysfs.parse_size(p["min_size"])
    want = f">= {minimum}" + (" of RAM" if minimum.percent is not None else "")
    ev: list[Evidence] = []
    ram = runtime_ok = None
    rt_txt = ""
    try:
        if host.live:
            runtime_ok, rt_txt, ram, mounts_ev = _runtime(host, minimum)
            ev.append(mounts_ev)
        entry = shm.fstab_entry(host.try_read_text(FSTAB) or "")
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "/dev/shm", f"/dev/shm size cannot be determined: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    boot_size, src = shm.boot_size(entry)
    ev.append(Evidence.file(FSTAB, entry.line, entry.raw.strip()) if entry is not None
              else Evidence.default("/dev/shm without an fstab entry", "50% of RAM"))
    boot_ok = shm.at_least(boot_size, minimum, ram)
    boot_txt = f"{shm.size_text(boot_size, ram)} ({src})"
    if not host.live and boot_ok is None:
        yield Result(Status.ERROR, "/dev/shm", f"/dev/shm at boot is {boot_txt}; it cannot be "
                     f"compared with {want} offline (the RAM size is unknown)", expected=want,
                     aspect=Aspect.PERSISTED, evidence=tuple(ev))
        return
    if host.live and not p.get("persist", True) and runtime_ok:
        boot_ok = True
    status, aspect, msg = verdict(host.live, runtime_ok if host.live else None, boot_ok,
                                  boot_set=entry is not None, what="/dev/shm size",
                                  runtime_txt=rt_txt, boot_txt=boot_txt, want=want)
    rem = _remediation(minimum, entry) if status is Status.FAIL else None
    if status is Status.FAIL and runtime_ok is False and boot_ok and \
            rt_txt != "not a tmpfs mount":  # the boot mount is right: apply it, only
        rem = apply_boot(entry, rt_txt != "not mounted")
    yield Result(status, "/dev/shm", msg, expected=want,
                 actual=rt_txt if host.live else boot_txt, aspect=aspect, evidence=tuple(ev),
                 remediation=rem)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``memory.shm``."""
    return [CheckSpec(
        id="memory.shm", title="/dev/shm is large enough for DataLoader workers",
        run=run, params_schema=SHM_SCHEMA,
        description=(
            "Live: /dev/shm in /proc/mounts (no size= means half of MemTotal). "
            "Boot: the /etc/fstab entry, else systemd's default (half of RAM)."))]
