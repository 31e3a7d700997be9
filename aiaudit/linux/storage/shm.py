"""The size of the ``/dev/shm`` tmpfs, now and at the next boot.

Sources: mm/shmem.c (``size=`` in bytes with ``k m g t p e`` suffixes or ``%`` of RAM,
``nr_blocks=`` in pages, ``0`` = unlimited; without either, half the RAM;
``shmem_show_options`` prints ``size=`` only when it is not that default), proc(5)
``/proc/mounts`` (the last mount on a path is the visible one), systemd's ``dev-shm.mount``
(half the RAM when ``/etc/fstab`` has no ``/dev/shm`` line).
"""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux import sysfs
from aiaudit.linux.storage import fstab
from aiaudit.linux.sysfs import Size, read_opt

SHM = "/dev/shm"
HALF = Size(percent=50)
"""tmpfs's default size, and systemd's ``/dev/shm`` without an fstab entry."""


def tmpfs_size(m: fstab.Mount | None) -> Size | None:
    """Size of a /dev/shm tmpfs mount; ``None`` = unlimited; no ``size=`` = half the RAM."""
    if m is None:
        return HALF
    opt = m.option("size")
    if opt is None:
        nr = m.option("nr_blocks")
        if nr is not None:
            n = sysfs.parse_size(nr)
            return Size(bytes=(n.bytes or 0) * 4096) if n.bytes else None
        return HALF
    s = sysfs.parse_size(opt)
    if s.bytes == 0 or s.percent == 0:
        return None
    return s


def at_least(size: Size | None, minimum: Size, ram: int | None) -> bool | None:
    """``size >= minimum`` (``size`` ``None``: unlimited); ``None`` when a percentage has
    to be compared with bytes and the RAM size is unknown."""
    if size is None:
        return True  # unlimited
    if size.percent is not None and minimum.percent is not None:
        return size.percent >= minimum.percent
    a, b = size.resolve(ram), minimum.resolve(ram)
    if a is None or b is None:
        return None
    return a >= b


def size_text(size: Size | None, ram: int | None) -> str:
    """``unlimited``, ``16G`` or ``50% of RAM (7.8G)``."""
    if size is None:
        return "unlimited"
    if size.percent is not None:
        b = size.resolve(ram)
        return f"{size} of RAM" + (f" ({sysfs.human_bytes(b)})" if b else "")
    return str(size)


def ram_bytes(host: Host) -> int | None:
    """``MemTotal`` of ``/proc/meminfo`` in bytes (live), ``None`` when unknown."""
    kb = fstab.meminfo_total_kb(read_opt(host, "/proc/meminfo") or "")
    return kb * 1024 if kb else None


def mounted(host: Host) -> fstab.Mount | None:
    """The visible ``/dev/shm`` mount of ``/proc/mounts`` (the last one), if any."""
    shm = [m for m in fstab.parse(host.read_text("/proc/mounts")) if m.target == SHM]
    return shm[-1] if shm else None


def fstab_entry(text: str) -> fstab.Mount | None:
    """The ``/dev/shm`` line of an fstab mounted at boot (the last one, not ``noauto``)."""
    entries = [m for m in fstab.parse(text) if m.target == SHM and "noauto" not in m.options]
    return entries[-1] if entries else None


def boot_size(entry: fstab.Mount | None) -> tuple[Size | None, str]:
    """(size at boot, where it comes from, root-relative): the fstab entry (another
    filesystem than tmpfs counts as no room), else systemd's default mount."""
    if entry is None:
        return HALF, "systemd default mount, half of RAM"
    size = tmpfs_size(entry) if entry.fstype == "tmpfs" else Size(bytes=0)
    return size, f"etc/fstab:{entry.line}"
