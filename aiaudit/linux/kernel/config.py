"""The kernel's build configuration: ``/proc/config.gz`` live, ``/boot/config-<release>``."""

from __future__ import annotations

import re
from typing import Iterator

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.sysfs import read_opt

PROC_CONFIG = "/proc/config.gz"


BOOT_DIR = "/boot"


CONFIG_PREFIX = "config-"
"""Kernel build configs are ``/boot/config-<release>``."""


KERNEL_CONFIG_MAX = 4 << 20
"""Most bytes a decompressed kernel config may have (a real one is ~250 KiB)."""


def _proc_config(host: Host) -> str | None:
    """The running kernel's own build config (``CONFIG_IKCONFIG_PROC``), decompressed with
    a bound so that a hostile file cannot expand without limit."""
    import zlib

    try:
        data = host.read_bytes(PROC_CONFIG)
    except HostError:
        return None
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, KERNEL_CONFIG_MAX)
    except zlib.error:
        return None
    if d.unconsumed_tail:
        return None
    return out.decode("utf-8", errors="replace")


def kernel_config(host: Host) -> tuple[str, str] | None:
    """(path, text) of the kernel config: live, the running kernel's ``/proc/config.gz``,
    else its ``/boot/config-<release>``; offline, the newest ``/boot/config-*`` (memoized)."""
    return host.memo(("kernel-config",), lambda: _kernel_config(host))


def _kernel_config(host: Host) -> tuple[str, str] | None:
    if host.live:
        text = _proc_config(host)
        if text is not None:
            return PROC_CONFIG, text
    names = [n for n in host.listdir(BOOT_DIR) if n.startswith(CONFIG_PREFIX)]
    if host.live:
        rel = read_opt(host, "/proc/sys/kernel/osrelease")
        if rel and f"{CONFIG_PREFIX}{rel}" in names:
            names = [f"{CONFIG_PREFIX}{rel}"]
    if not names:
        return None
    name = sorted(names, key=lambda n: [int(p) if p.isdigit() else 0
                                        for p in re.split(r"\D+", n[len(CONFIG_PREFIX):])
                                        if p])[-1]
    try:
        return f"{BOOT_DIR}/{name}", host.read_text(f"{BOOT_DIR}/{name}")
    except HostError:
        return None


def kernel_config_missing(host: Host) -> str:
    """What :func:`kernel_config` looked for when it found nothing, in display form
    (``no boot/config-*``; live also ``/proc/config.gz``), for a ``default`` evidence."""
    files = f"{BOOT_DIR.lstrip('/')}/{CONFIG_PREFIX}*"
    return f"no {PROC_CONFIG} or {files}" if host.live else f"no {files}"


@record
class ConfigChoice:
    """The ``CONFIG_<PREFIX>_<CHOICE>=y`` line of a Kconfig ``choice`` in the kernel
    config (``CONFIG_CPU_FREQ_DEFAULT_GOV_SCHEDUTIL=y``)."""

    value: str
    """The choice, lower case (``schedutil``)."""
    path: str
    line: int
    text: str
    """The line, stripped."""


def config_choice(host: Host, prefix: str, choices: tuple[str, ...] | None = None
                  ) -> ConfigChoice | None:
    """The first ``CONFIG_<prefix>_<CHOICE>=y`` line of :func:`kernel_config`.  With
    ``choices``, only the choice's own symbols count: other options may share the prefix
    (``CONFIG_TRANSPARENT_HUGEPAGE_SHMEM_HUGE_ALWAYS``, the shmem default since 6.14, is not
    the anonymous-memory default); without, any upper-case word after the prefix does."""
    kc = kernel_config(host)
    if kc is None:
        return None
    path, text = kc
    names = "|".join(c.upper() for c in choices) if choices else "[A-Z]+"
    rx = re.compile(rf"CONFIG_{prefix}_({names})=y")
    for n, line in lines_with(text, f"CONFIG_{prefix}_"):
        m = rx.fullmatch(line)
        if m:
            return ConfigChoice(m.group(1).lower(), path, n, line)
    return None


def lines_with(text: str, needle: str) -> Iterator[tuple[int, str]]:
    """(number, stripped text) of each line of ``text`` that contains ``needle``, in order,
    lines ending at ``\\n``.  A kernel config has some 10,000 lines and a rule asks for one
    or two symbols: finding them costs a few searches instead of a Python step a line."""
    pos = counted = 0
    number = 1
    while (i := text.find(needle, pos)) >= 0:
        start = text.rfind("\n", 0, i) + 1
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
        number += text.count("\n", counted, start)
        counted = start
        yield number, text[start:end].strip()
        pos = end + 1
