"""AMD's packages as the package databases list them: ``amdgpu-dkms`` (the out-of-tree
driver) and ``rocm-core`` (every ROCm release installs it), from dpkg's status file or the
rpm database (``rpmdb.sqlite``, read only where it exists).  Kept apart from
:mod:`.stack` so that deciding whether the AMD rules apply imports little."""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.packages.installed import DPKG_STATUS, dpkg_installed

RPMDB_SQLITE = "/var/lib/rpm/rpmdb.sqlite"
NAMES = ("amdgpu-dkms", "rocm-core")


def amd_packages(host: Host) -> dict[str, tuple[str, str]]:
    """``amdgpu-dkms`` and ``rocm-core`` as installed: name -> (version, database)."""

    def load() -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        try:
            for name, info in dpkg_installed(host, NAMES).items():
                if name in NAMES:
                    out[name] = (info.get("Version", ""), DPKG_STATUS)
        except (HostError, ParseError):
            pass
        if host.exists(RPMDB_SQLITE):
            from aiaudit.linux.gpu.stack import rpm_packages  # only where rpm is used

            for name, version in rpm_packages(host).items():
                if name in NAMES:
                    out.setdefault(name, (version, RPMDB_SQLITE))
        return out

    return host.memo(("amdgpu-packages",), load)
