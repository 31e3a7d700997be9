"""Installed packages of the scanned root (dpkg status database), read once per run."""

from __future__ import annotations

from aiaudit.errors import HostError, NotFound, ParseError
from aiaudit.host import Host
from aiaudit.parsers import dpkg

DPKG_STATUS = "/var/lib/dpkg/status"


def dpkg_installed(host: Host) -> dict[str, dict[str, str]]:
    """``{package: {field: value}}`` for installed packages; empty when the root has no
    dpkg database (RPM distros, minimal images).  An unreadable or binary database raises
    :class:`~aiaudit.errors.HostError` / :class:`~aiaudit.errors.ParseError`."""

    def load() -> dict[str, dict[str, str]]:
        try:
            text = host.read_text(DPKG_STATUS, cap=64 * 1024 * 1024)
        except NotFound:
            return {}
        return dpkg.parse_status(text)

    return host.memo(("dpkg-status",), load)


def dpkg_version(host: Host, package: str) -> str | None:
    """Full Debian version of an installed package, or ``None`` (not installed, no dpkg
    database, or the database cannot be read)."""
    try:
        info = dpkg_installed(host).get(package)
    except (HostError, ParseError):
        return None
    return info.get("Version") if info else None
