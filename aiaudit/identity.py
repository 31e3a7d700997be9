"""Host identity: the same names in every output (hostname, machine id, DMI UUID, OS, image).

Live, the hostname and kernel come from ``/proc`` and the DMI product UUID from ``/sys`` (root
only); offline only files of the scanned root are read.  ``image_id`` names the golden image
the root was built from, in both modes (a live node built from an image says which one):

1. ``os-release(5)`` ``IMAGE_ID`` / ``IMAGE_VERSION`` (set by mkosi and other image
   builders), with ``BUILD_ID`` when present: ``gpu-node:2024.06 build 417``;
2. else the first of the image stamp files in :data:`IMAGE_ID_FILES` that says something:
   Amazon Linux ``/etc/image-id`` (``image_file``, or ``image_name:image_version``), Ubuntu
   cloud images' ``/etc/cloud/build.info`` (``build_name:serial``), NVIDIA DGX OS
   ``/etc/dgx-release`` (``DGX_NAME:DGX_SWBUILD_VERSION``), diskimage-builder's
   ``/etc/dib-builddate.txt`` and plain one-line stamps (``/etc/image_id``,
   ``/etc/buildinfo``).
"""

from __future__ import annotations

import re
from typing import Callable

from aiaudit.errors import HostError
from aiaudit.host import Host
from aiaudit.model import HostInfo

_MACHINE_ID = re.compile(r"^[0-9a-f]{32}$")
"""machine-id(5): 32 lower-case hex digits; an image ships it empty or ``uninitialized``."""


def _first_line(host: Host, path: str) -> str | None:
    text = _read(host, path)
    if text is None:
        return None
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    return line or None


def _read(host: Host, path: str) -> str | None:
    try:
        return host.read_text(path, cap=65536)
    except HostError:
        return None


def _kv(text: str) -> dict[str, str]:
    from aiaudit.parsers.osrelease import parse_os_release

    return parse_os_release(text)


def _joined(*parts: str | None) -> str | None:
    got = [p for p in parts if p]
    return ":".join(got) if got else None


def _amazon_image_id(text: str) -> str | None:
    """Amazon Linux ``/etc/image-id`` (``image_name="..."`` lines), or a one-line id."""
    kv = _kv(text)
    if kv:
        return kv.get("image_file") or _joined(kv.get("image_name"), kv.get("image_version"))
    return _plain(text)


def _cloud_build_info(text: str) -> str | None:
    """Ubuntu cloud images' ``/etc/cloud/build.info``: ``build_name: server``, ``serial:``."""
    kv = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            kv[key.strip()] = value.strip()
    return _joined(kv.get("build_name"), kv.get("serial"))


def _dgx_release(text: str) -> str | None:
    """NVIDIA DGX OS ``/etc/dgx-release``: ``DGX_NAME``, ``DGX_SWBUILD_VERSION``."""
    kv = _kv(text)
    if not kv.get("DGX_SWBUILD_VERSION"):
        return None
    return _joined(kv.get("DGX_NAME") or "DGX", kv["DGX_SWBUILD_VERSION"])


def _plain(text: str) -> str | None:
    lines = text.strip().splitlines()
    return lines[0].strip() or None if lines else None


IMAGE_ID_FILES: tuple[tuple[str, Callable[[str], str | None]], ...] = (
    ("/etc/image-id", _amazon_image_id),
    ("/etc/image_id", _plain),
    ("/etc/cloud/build.info", _cloud_build_info),
    ("/etc/dgx-release", _dgx_release),
    ("/etc/dib-builddate.txt", _plain),
    ("/etc/buildinfo", _plain),
)
"""Files that image builders drop to identify a golden image, with how to read each."""


def os_release(host: Host) -> dict[str, str]:
    """``os-release`` fields of the scanned root (``/etc`` first, then ``/usr/lib``)."""
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        text = _read(host, path)
        if text is not None:
            return _kv(text)
    if host.is_real_root:
        return _distro_fallback()
    return {}


def _distro_fallback() -> dict[str, str]:
    """Old systems without os-release (RHEL/CentOS 6, old SLES): let the ``distro`` library
    read ``/etc/*-release`` and ``lsb_release`` data.  Only for the real ``/``: distro reads
    the files itself, which must never happen inside another scan root."""
    import distro

    d = distro.LinuxDistribution(include_lsb=False, include_uname=False,
                                 include_oslevel=False)
    out = {"ID": d.id(), "VERSION_ID": d.version(), "PRETTY_NAME": d.name(pretty=True)}
    return {k: v for k, v in out.items() if v}


def image_identity(host: Host, osr: dict[str, str]) -> str | None:
    """What identifies the image the scanned root was built from, or ``None``."""
    if osr.get("IMAGE_ID"):
        ident = _joined(osr["IMAGE_ID"], osr.get("IMAGE_VERSION"))
        return f"{ident} build {osr['BUILD_ID']}" if osr.get("BUILD_ID") else ident
    for path, extract in IMAGE_ID_FILES:
        text = _read(host, path)
        value = extract(text) if text is not None else None
        if value:
            return " ".join(value.split())[:200]
    return None


def machine_id(host: Host) -> str | None:
    """``/etc/machine-id`` when it holds a real id (not empty or ``uninitialized``, as an
    image that will get its id at first boot ships it)."""
    value = _first_line(host, "/etc/machine-id")
    return value if value and _MACHINE_ID.match(value) else None


def host_info(host: Host) -> HostInfo:
    """Identity of the scanned host or image, read through ``host`` only."""
    if host.live:
        hostname = _first_line(host, "/proc/sys/kernel/hostname")
        kernel = _first_line(host, "/proc/sys/kernel/osrelease")
        uuid = _first_line(host, "/sys/class/dmi/id/product_uuid")
    else:
        hostname, kernel, uuid = None, None, None
    hostname = hostname or _first_line(host, "/etc/hostname") or "unknown"
    osr = os_release(host)
    return HostInfo(
        hostname=hostname,
        machine_id=machine_id(host),
        os_name=osr.get("PRETTY_NAME") or osr.get("NAME"),
        os_version=osr.get("VERSION_ID"),
        os_id=osr.get("ID"),
        kernel=kernel,
        root=host.root,
        mode=host.mode,
        product_uuid=uuid,
        image_id=image_identity(host, osr),
    )
