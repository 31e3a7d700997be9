"""Host identity: the same names in every output (hostname, machine id, DMI UUID, OS)."""

from __future__ import annotations

from aiaudit.errors import HostError
from aiaudit.host import Host
from aiaudit.model import HostInfo

IMAGE_ID_FILES = ("/etc/image-id", "/etc/image_id", "/etc/cloud/build.info", "/etc/buildinfo")
"""Files that image builders commonly drop to identify a golden image."""


def _first_line(host: Host, path: str) -> str | None:
    try:
        text = host.read_text(path, cap=65536)
    except HostError:
        return None
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    return line or None


def os_release(host: Host) -> dict[str, str]:
    """``os-release`` fields of the scanned root (``/etc`` first, then ``/usr/lib``)."""
    from aiaudit.parsers.osrelease import parse_os_release

    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            return parse_os_release(host.read_text(path, cap=65536))
        except HostError:
            continue
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
    image_id = osr.get("IMAGE_ID")
    if image_id and osr.get("IMAGE_VERSION"):
        image_id = f"{image_id}:{osr['IMAGE_VERSION']}"
    if not image_id and not host.live:
        for path in IMAGE_ID_FILES:
            image_id = _first_line(host, path)
            if image_id:
                break
    return HostInfo(
        hostname=hostname,
        machine_id=_first_line(host, "/etc/machine-id"),
        os_name=osr.get("PRETTY_NAME") or osr.get("NAME"),
        os_version=osr.get("VERSION_ID"),
        os_id=osr.get("ID"),
        kernel=kernel,
        root=host.root,
        mode=host.mode,
        product_uuid=uuid,
        image_id=image_id,
    )
