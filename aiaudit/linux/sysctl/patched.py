"""Kernel defaults that a distribution changes by patching its kernel, and who built the
kernel that will boot.

The upstream kernel leaves ``fs.protected_symlinks`` and ``fs.protected_hardlinks`` at 0
(``fs/namei.c``, since 3.7: commit 561ec64ae67e "VFS: don't do protected {sym,hard}links by
default").  Debian's ``linux`` source package sets both to 1 with its patch
``debian/fs-enable-link-security-restrictions-by-default.patch``.  Debian's systemd does
not install upstream's ``50-default.conf`` (which sets them); Debian 12's procps still ships
``/usr/lib/sysctl.d/99-protect-links.conf``, Debian 13's does not: on a Debian 13 host
only the kernel patch sets them.

Debian's kernels also start ``kernel.perf_event_paranoid`` at 3 (a level upstream does
not have; upstream 2) and ``kernel.yama.ptrace_scope`` at 0 (Yama off by default; upstream
1).  Each value was read from the kernel images themselves (the ``ctl_table`` entry's data
in the decompressed ``vmlinuz``: ``tests/linux/sysctl/vmlinux_oracle.py``): Debian 13's
``linux-image-6.12.117+deb13-amd64`` 6.12.117-1 and Debian 12's
``linux-image-6.1.0-57-amd64`` 6.1.192-3 both have 1, 1, 3 and 0.

So the default of such a key is known only when the kernel that will boot is known and
so is its builder's patch: a Debian kernel of a verified series (:data:`VERIFIED_FROM`:
6.1 on) gives the patched value; an older Debian kernel, any other kernel
(another distribution's, a custom build, none in the root) gives "unknown", never the
upstream value as a fact.  The kernel that boots: the bootloader's default entry
(:func:`aiaudit.linux.sysctl.boot.boot_kernel_release`), else live the running kernel,
else the only kernel the root holds.  Its builder: the ``Maintainer`` of the dpkg package
``linux-image-<release>`` (``-unsigned``), else, for the running kernel, ``/proc/version``
(Debian's builds say ``(debian-kernel@lists.debian.org)``).
"""

from __future__ import annotations

from typing import Mapping

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record

DEBIAN_KERNEL_TEAM = "debian-kernel@lists.debian.org"
"""The Debian kernel team's address: the ``Maintainer`` of Debian's ``linux-image-*``
packages and the build user of their ``/proc/version``."""

DEBIAN_LINKS_PATCH = ("Debian's kernel patch debian/fs-enable-link-security-restrictions-"
                      "by-default.patch")
DEBIAN_PERF_PATCH = ("Debian's kernel patch features/all/security-perf-allow-further-"
                     "restriction-of-perf_event_open.patch")
DEBIAN_YAMA_PATCH = "Debian's kernel patch debian/yama-disable-by-default.patch"

PATCHED: Mapping[str, Mapping[str, tuple[str, str]]] = {
    "fs/protected_symlinks": {"debian": ("1", DEBIAN_LINKS_PATCH)},
    "fs/protected_hardlinks": {"debian": ("1", DEBIAN_LINKS_PATCH)},
    "kernel/perf_event_paranoid": {"debian": ("3", DEBIAN_PERF_PATCH)},
    "kernel/yama/ptrace_scope": {"debian": ("0", DEBIAN_YAMA_PATCH)},
}
"""Keys (slash form) whose default some distribution's kernel changes: {builder: (value,
what sets it)}.  For these keys the upstream default is not assumed for a kernel whose
builder is not known."""

UPSTREAM: Mapping[str, str] = {"fs/protected_symlinks": "0", "fs/protected_hardlinks": "0",
                               "kernel/perf_event_paranoid": "2",
                               "kernel/yama/ptrace_scope": "1"}
"""The upstream default of the :data:`PATCHED` keys (for messages)."""


@record
class KernelBuild:
    """The kernel that will boot and who built it."""

    release: str | None
    """``6.12.48+deb13-amd64``; ``None`` when the root holds no kernel aiaudit can name."""
    builder: str | None
    """``debian``, or ``None`` when not known."""
    text: str
    """The kernel in words, for messages (``6.12.48+deb13-amd64, package
    linux-image-6.12.48+deb13-amd64 by Debian Kernel Team``)."""
    evidence: tuple[Evidence, ...]


@record
class PatchedDefault:
    """The default of a :data:`PATCHED` key for the kernel that will boot."""

    value: str | None
    """The value, or ``None`` when it is unknown."""
    text: str
    """Why, in words (``kernel default 1: ...`` or ``kernel default unknown: ...``)."""
    evidence: tuple[Evidence, ...]


VERIFIED_FROM: Mapping[str, tuple[int, int]] = {"debian": (6, 1)}
"""The oldest kernel series of each builder whose patched values were read from an image
(Debian 12's 6.1); older kernels of that builder are not assumed to carry them."""


def _series(release: str | None) -> tuple[int, int] | None:
    parts = (release or "").split(".", 2)
    if len(parts) < 2 or not parts[0].isdigit():
        return None
    minor = "".join(c for c in parts[1][:3] if c.isdigit()) if parts[1][:1].isdigit() else ""
    return (int(parts[0]), int(minor)) if minor else None


def patched_default(host: Host, key: str) -> PatchedDefault | None:
    """The default of ``key`` (slash form) for the kernel that will boot, when some
    distribution patches it (:data:`PATCHED`); ``None`` for other keys (the upstream
    default, the rule's ``kernel_default``, holds for them)."""
    patches = PATCHED.get(key)
    if patches is None:
        return None
    kb = kernel_build(host)
    series = _series(kb.release) if kb.release is not None else VERIFIED_FROM.get(
        kb.builder or "")  # several kernels of one builder: each was checked in _kernel_build
    if kb.builder is not None and kb.builder in patches and series is not None \
            and series >= VERIFIED_FROM[kb.builder]:
        value, why = patches[kb.builder]
        return PatchedDefault(value, f"kernel default {value}: {why} (the kernel that boots "
                              f"is {kb.text})", kb.evidence)
    who = ", ".join(f"{b.capitalize()}: {v}" for b, (v, _w) in patches.items())
    up = UPSTREAM.get(key)
    upstream = f", upstream: {up}" if up is not None else ""
    if kb.release is None:
        return PatchedDefault(None, f"kernel default unknown: {kb.text}, and distribution "
                              f"kernels differ ({who}{upstream})", kb.evidence)
    return PatchedDefault(None, f"kernel default unknown: the kernel that boots is {kb.text}, "
                          f"not one whose patches aiaudit knows ({who}{upstream})",
                          kb.evidence)


def kernel_build(host: Host) -> KernelBuild:
    """The kernel that will boot and its builder (memoized)."""
    return host.memo(("kernel-build",), lambda: _kernel_build(host))


def _kernel_build(host: Host) -> KernelBuild:
    releases, how = _boot_releases(host)
    if not releases:
        return KernelBuild(None, None, how, ())
    builds = [_built_by(host, rel, how) for rel in releases]
    if len(builds) == 1:
        return builds[0]
    builders = {b.builder for b in builds}
    old = [b for b in builds if (_series(b.release) or (0, 0))
           < VERIFIED_FROM.get(b.builder or "", (99, 0))]
    if len(builders) == 1 and None not in builders and not old:  # several, one builder
        return KernelBuild(None, builds[0].builder, f"one of {how}, each "
                           + "; ".join(b.text for b in builds[:3]),
                           tuple(e for b in builds[:3] for e in b.evidence))
    return KernelBuild(None, None, f"{how} and no bootloader entry says which boots",
                       ())


def _built_by(host: Host, release: str, how: str) -> KernelBuild:
    """Who built the kernel ``release``: its dpkg package's maintainer, else (the running
    kernel) ``/proc/version``."""
    for name in (f"linux-image-{release}", f"linux-image-{release}-unsigned"):
        fields = _package(host, name)
        if fields is not None:
            maint = fields.get("Maintainer", "")
            builder = "debian" if DEBIAN_KERNEL_TEAM in maint else None
            who = maint.split("<", 1)[0].strip() or "an unnamed maintainer"
            ev = Evidence.file("/var/lib/dpkg/status", None,
                               f"Package: {name}, Maintainer: {maint}")
            return KernelBuild(release, builder, f"{release} ({how}; package {name} "
                               f"{fields.get('Version', '')} by {who})", (ev,))
    if host.live and release == _running_release(host):
        try:
            version = host.read_text("/proc/version").strip()
        except HostError:
            version = ""
        if version:
            builder = "debian" if f"({DEBIAN_KERNEL_TEAM})" in version else None
            return KernelBuild(release, builder, f"{release} ({how}; /proc/version: "
                               f"{version[:160]})",
                               (Evidence.runtime("/proc/version", version[:160]),))
    return KernelBuild(release, None, f"{release} ({how}; no package linux-image-{release} "
                       "in the dpkg database says who built it)", ())


def _package(host: Host, name: str) -> dict[str, str] | None:
    from aiaudit.linux.packages.installed import dpkg_package

    try:
        return dpkg_package(host, name)
    except (HostError, ParseError):
        return None


def _running_release(host: Host) -> str | None:
    from aiaudit.linux.sysfs import read_opt

    return read_opt(host, "/proc/sys/kernel/osrelease") if host.live else None


def _boot_releases(host: Host) -> tuple[list[str], str]:
    """(releases, how they were chosen) of the kernel that will boot: one release when the
    bootloader, the running kernel or a single kernel in the root names it; every kernel
    of the root when there are several and nothing says which boots; none (and what was
    looked for) when the root holds no kernel."""
    from aiaudit.linux.sysctl.boot import boot_kernel_release

    rel = boot_kernel_release(host)
    if rel:
        return [rel], "the bootloader's default entry"
    running = _running_release(host)
    if running:
        return [running], "the running kernel"
    found = sorted({n.split("-", 1)[1] for n in host.listdir("/boot")
                    if n.startswith(("vmlinuz-", "config-")) and "-" in n}
                   | set(host.listdir("/lib/modules")) | set(host.listdir("/usr/lib/modules")))
    if len(found) == 1:
        return found, "the only kernel in the root"
    if not found:
        return [], "no kernel in the root (no boot/vmlinuz-*, lib/modules/*)"
    return found[:16], f"the {len(found)} kernels in the root"
