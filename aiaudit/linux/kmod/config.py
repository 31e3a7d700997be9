"""The kernel-module configuration of the scanned root, as kmod and systemd-modules-load
read it, and which modules the live kernel has loaded.

Sources: modprobe.d(5) (kmod's directories, highest priority first; a file in an earlier
directory hides a file of the same basename in a later one; a link to ``/dev/null`` masks
it; only ``*.conf`` files count), modules-load.d(5) (systemd-modules-load, the same rules),
Debian's ``/etc/modules``; ``/sys/module/<name>`` exists while a module is loaded
(Documentation/ABI/testing/sysfs-module).  The file formats are in :mod:`.modprobe`.
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.linux.kmod import modprobe

MODPROBE_DIRS = ("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d",
                 "/lib/modprobe.d", "/usr/lib/modprobe.d")
"""kmod's configuration directories, highest priority first (modprobe.d(5))."""
MODULES_LOAD_DIRS = ("/etc/modules-load.d", "/run/modules-load.d",
                     "/usr/local/lib/modules-load.d", "/usr/lib/modules-load.d",
                     "/lib/modules-load.d")
"""systemd-modules-load's directories, highest priority first (modules-load.d(5))."""
DEBIAN_MODULES = "/etc/modules"
"""Debian's list of modules loaded at boot (read after modules-load.d)."""


def conf_files(host: Host, dirs: tuple[str, ...]) -> list[str]:
    """``*.conf`` of ``dirs`` by basename (first directory wins), in basename order;
    masked (``/dev/null``) files left out."""
    chosen: dict[str, str] = {}
    for d in dirs:
        for n in host.listdir(d):
            if n.endswith(".conf") and n not in chosen:
                chosen[n] = f"{d}/{n}"
    return [chosen[n] for n in sorted(chosen) if not host.is_masked(chosen[n])]


def modprobe_config(host: Host) -> list[modprobe.Command]:
    """Every modprobe.d command of the scanned root, in kmod's order (read once per run;
    an unreadable or binary file is skipped)."""

    def load() -> list[modprobe.Command]:
        out: list[modprobe.Command] = []
        for path in conf_files(host, MODPROBE_DIRS):
            try:
                out += modprobe.parse_modprobe(host.read_text(path), path)
            except (HostError, ParseError):
                continue
        return out

    return host.memo(("modprobe-d",), load)


def modules_loaded_at_boot(host: Host) -> dict[str, Evidence]:
    """Modules systemd-modules-load (and Debian's ``/etc/modules``) loads at boot: the
    normalised name -> the file and line that lists it first (read once per run)."""

    def load() -> dict[str, Evidence]:
        out: dict[str, Evidence] = {}
        files = conf_files(host, MODULES_LOAD_DIRS)
        if host.is_file(DEBIAN_MODULES):
            files.append(DEBIAN_MODULES)
        for path in files:
            try:
                for name, line in modprobe.parse_modules_load(host.read_text(path), path):
                    out.setdefault(modprobe.norm(name), Evidence.file(path, line, name))
            except (HostError, ParseError):
                continue
        return out

    return host.memo(("modules-load-d",), load)


def is_loaded(host: Host, name: str) -> bool:
    """The live kernel has module ``name`` loaded (``/sys/module/<name>``, ``-`` and ``_``
    alike)."""
    return host.is_dir(f"/sys/module/{modprobe.norm(name)}")
