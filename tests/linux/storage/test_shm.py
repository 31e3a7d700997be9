"""aiaudit.linux.storage.shm: tmpfs sizes of /dev/shm."""

from __future__ import annotations

from aiaudit.linux.storage import fstab, shm
from aiaudit.linux.sysfs import Size

GIB = 1 << 30


def _mount(opts: str, fstype: str = "tmpfs") -> fstab.Mount:
    (m,) = fstab.parse(f"tmpfs /dev/shm {fstype} {opts} 0 0\n")
    return m


def test_tmpfs_size_options() -> None:
    assert shm.tmpfs_size(None) == Size(percent=50)
    assert shm.tmpfs_size(_mount("rw,nosuid")) == Size(percent=50)
    assert shm.tmpfs_size(_mount("size=8g")) == Size(bytes=8 * GIB)
    assert shm.tmpfs_size(_mount("size=25%")) == Size(percent=25)
    assert shm.tmpfs_size(_mount("size=0")) is None            # unlimited
    assert shm.tmpfs_size(_mount("nr_blocks=1k")) == Size(bytes=1024 * 4096)
    assert shm.tmpfs_size(_mount("nr_blocks=0")) is None


def test_at_least_and_text() -> None:
    ram = 16 * GIB
    assert shm.at_least(None, Size(percent=90), None) is True
    assert shm.at_least(Size(percent=50), Size(percent=40), None) is True
    assert shm.at_least(Size(percent=50), Size(bytes=4 * GIB), None) is None   # RAM unknown
    assert shm.at_least(Size(percent=50), Size(bytes=4 * GIB), ram) is True
    assert shm.at_least(Size(bytes=GIB), Size(percent=10), ram) is False
    assert shm.size_text(None, ram) == "unlimited"
    assert shm.size_text(Size(percent=50), ram) == "50% of RAM (8G)"
    assert shm.size_text(Size(percent=50), None) == "50% of RAM"
    assert shm.size_text(Size(bytes=64 << 20), ram) == "64M"


def test_fstab_entry_and_boot_size() -> None:
    text = ("tmpfs /dev/shm tmpfs size=1g 0 0\n"
            "tmpfs /dev/shm tmpfs size=2g 0 0\n"
            "tmpfs /dev/shm tmpfs noauto,size=4g 0 0\n")
    entry = shm.fstab_entry(text)
    assert entry is not None and entry.line == 2
    assert shm.boot_size(entry) == (Size(bytes=2 * GIB), "etc/fstab:2")
    assert shm.boot_size(None) == (Size(percent=50), "systemd default mount, half of RAM")
    other = shm.fstab_entry("none /dev/shm ramfs defaults 0 0\n")
    assert shm.boot_size(other)[0] == Size(bytes=0)     # not a tmpfs: no room counted
    assert shm.fstab_entry("# nothing\n") is None
