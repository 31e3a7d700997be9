"""Swap the next boot turns on: ``/etc/fstab`` swap lines, enabled ``.swap`` units and
zram-generator devices.

Sources: fstab(5) and systemd-fstab-generator (``swap`` lines without ``noauto``),
systemd.swap(5) (a ``.swap`` unit pulled in by a ``.wants``/``.requires`` link; a link to
``/dev/null`` in ``/etc`` or ``/run`` masks it), zram-generator.conf(5) (the first of
``/etc``, ``/run``, ``/usr/local/lib``, ``/usr/lib`` ``systemd/zram-generator.conf``, masked
by a link to ``/dev/null``, then the ``.conf.d`` drop-ins; a ``[zramN]`` section is a swap
device unless ``zram-size``/``zram-fraction`` is 0 or ``fs-type`` is not swap; nothing
happens without the generator installed).  GPT auto-discovered swap partitions
(systemd-gpt-auto-generator) are not visible offline.
"""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.core.startup import lazy_pattern
from aiaudit.linux.storage import fstab
from aiaudit.linux.systemd import units as systemd

FSTAB = "/etc/fstab"
ZRAM_CONFS = ("/etc/systemd/zram-generator.conf", "/run/systemd/zram-generator.conf",
              "/usr/local/lib/systemd/zram-generator.conf",
              "/usr/lib/systemd/zram-generator.conf")
ZRAM_DROPINS = ("/etc/systemd/zram-generator.conf.d", "/run/systemd/zram-generator.conf.d",
                "/usr/local/lib/systemd/zram-generator.conf.d",
                "/usr/lib/systemd/zram-generator.conf.d")
GENERATOR_DIRS = ("/usr/lib/systemd/system-generators", "/lib/systemd/system-generators")
MASK_DIRS = ("/etc/systemd/system", "/run/systemd/system")
"""Where ``systemctl mask`` puts its ``/dev/null`` links."""
_ZRAM_SECTION = lazy_pattern(r"\[(zram\d+)\]")

ZramSection = tuple[str, int, str, bool]
"""(file, line of the section header, section name, creates a swap device)."""


def fstab_swaps(text: str) -> list[fstab.Mount]:
    """The swap lines of an fstab that are activated at boot (no ``noauto``)."""
    return [m for m in fstab.parse(text) if m.fstype == "swap" and "noauto" not in m.options]


def enabled_swap_units(host: Host) -> list[tuple[str, str]]:
    """(unit name, ``<dir>/<target>.wants`` it is enabled in) of every enabled, unmasked
    ``.swap`` unit, the first link of each name."""
    found: list[tuple[str, str]] = []
    names: set[str] = set()
    for d in systemd.ENABLE_DIRS:
        for sub in host.listdir(d):
            if not sub.endswith((".wants", ".requires")):
                continue
            for n in host.listdir(f"{d}/{sub}"):
                # a masked unit never starts (systemctl mask: /etc/systemd/system)
                masked = any(host.is_masked(f"{m}/{n}") for m in MASK_DIRS)
                if n.endswith(".swap") and n not in names and not masked:
                    names.add(n)
                    found.append((n, f"{d}/{sub}"))
    return found


def parse_zram(text: str, file: str, sections: dict[str, ZramSection]) -> None:
    """Add the ``[zramN]`` sections of one zram-generator configuration to ``sections``
    (a later file's keys change an earlier file's section)."""
    sec = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        m = _ZRAM_SECTION().fullmatch(line)
        if m:
            sec = m.group(1)
            prev = sections.get(sec)
            sections[sec] = (file, n, sec, prev[3] if prev else True)
        elif sec and "=" in line and not line.startswith("#"):
            k, _, v = line.partition("=")
            k, v = k.strip(), v.strip()
            if (k in ("zram-size", "zram-fraction") and v in ("0", "0.0")) or \
                    (k == "fs-type" and v != "swap"):
                sections[sec] = (*sections[sec][:3], False)


def _zram_files(host: Host) -> list[str]:
    """The zram-generator configuration files, in the order they are read."""
    chosen = next((f for f in ZRAM_CONFS if host.lstat_exists(f)), None)
    files = [] if chosen is None or host.is_masked(chosen) else [chosen]
    for d in ZRAM_DROPINS:
        files += [f"{d}/{n}" for n in host.listdir(d) if n.endswith(".conf")]
    return files


def zram_swaps(host: Host) -> list[tuple[str, int, str]]:
    """zram swap devices zram-generator will create: (file, line, section)."""
    sections: dict[str, ZramSection] = {}
    for f in _zram_files(host):
        parse_zram(host.try_read_text(f) or "", f, sections)
    gen = any(host.exists(f"{d}/zram-generator") for d in GENERATOR_DIRS)
    return [(f, n, s) for f, n, s, on in sections.values() if on and gen]
