"""Which pam_limits build the scanned root has: distribution family and PAM version.

The behaviour that differs between builds (``modules/pam_limits/pam_limits.c`` history and
Debian's ``debian/patches-applied``):

* Debian patch 027 (before 1.7.0-1): every call starts from ``/proc/1/limits`` (an implicit
  ``set_all``), soft nofile capped at 1024; ``*``/``@group`` lines never apply to root.
* PAM 1.5.2: an unlimited nofile becomes ``fs.nr_open``.
* PAM 1.5.3: a missing limits.conf no longer fails the session; vendordir builds (not
  Debian) fall back to ``/usr/lib/security``.

The version comes from dpkg (``libpam-modules``); a Debian-family root without a dpkg record
gets its release's PAM (:data:`DISTRO_PAM`), anything else upstream semantics.
"""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.core.records import record
from aiaudit.linux.packages import dpkg
from aiaudit.linux.packages.installed import dpkg_version


@record
class PamBuild:
    """Which pam_limits behaviour the scanned root has."""

    debian: bool
    version: str | None
    vt: tuple[int, ...]
    note: str

    @property
    def kernel_start(self) -> bool:
        """Debian patch 027 before 1.7.0-1: always start from /proc/1/limits (set_all)."""
        return self.debian and (not self.vt or self.vt < (1, 7))

    @property
    def nr_open(self) -> bool:
        """Unlimited nofile becomes fs.nr_open (upstream 1.5.2)."""
        return not self.vt or self.vt >= (1, 5, 2)

    @property
    def missing_conf_fatal(self) -> bool:
        """A missing limits.conf fails the session (``fopen`` check before 1.5.3)."""
        return bool(self.vt) and self.vt < (1, 5, 3)

    @property
    def vendordir(self) -> bool:
        """/usr/lib/security fallbacks (1.5.3+ vendordir builds; Debian does not use it)."""
        return not self.debian and (not self.vt or self.vt >= (1, 5, 3))


DISTRO_PAM: dict[tuple[str, str], str] = {
    ("debian", "10"): "1.3.1", ("debian", "11"): "1.4.0", ("debian", "12"): "1.5.2",
    ("debian", "13"): "1.7.0",
    ("ubuntu", "20.04"): "1.3.1", ("ubuntu", "22.04"): "1.4.0", ("ubuntu", "24.04"): "1.5.3",
}
"""Upstream PAM version of each Debian/Ubuntu release (packages.debian.org,
packages.ubuntu.com ``libpam-modules``), used when the root has no dpkg record."""
DEFAULT_DISTRO_PAM = ("debian", "12")


def pam_build(host: Host) -> PamBuild:
    """Detect distro family (os-release) and PAM version (dpkg) of the scanned root
    (memoized per run)."""
    return host.memo(("limits-pam-build",), lambda: _load(host))


def _load(host: Host) -> PamBuild:
    from aiaudit.core.identity import os_release

    osr = os_release(host)
    ids = {osr.get("ID", "")} | set(osr.get("ID_LIKE", "").split())
    debian = bool(ids & {"debian", "ubuntu"})
    full = dpkg_version(host, "libpam-modules") or dpkg_version(host, "libpam0g")
    if full:
        up = dpkg.upstream_version(full)
        return PamBuild(debian, full, dpkg.version_tuple(up),
                        f"{'Debian' if debian else 'dpkg'} PAM {full}")
    if debian:
        return release_build(next(iter(ids & {"ubuntu"}), "debian"), osr.get("VERSION_ID", ""))
    name = osr.get("PRETTY_NAME") or osr.get("ID") or "unknown distribution"
    return PamBuild(False, None, (), f"{name}: upstream pam_limits semantics "
                    "(version unknown, assumed >= 1.5.3)")


def release_build(distro: str, version_id: str) -> PamBuild:
    """The build of a Debian-family root without a dpkg record (a stripped image): the
    release's own PAM, applied as if dpkg had said so, so that every version-dependent rule
    agrees with the note."""
    rel = (distro, version_id)
    up = DISTRO_PAM.get(rel, DISTRO_PAM[DEFAULT_DISTRO_PAM])
    how = (f"{rel[0].capitalize()} {rel[1]}'s PAM {up}" if rel in DISTRO_PAM
           else f"PAM {up} (Debian 12's; release {rel[1] or 'unknown'} not known)")
    return PamBuild(True, None, dpkg.version_tuple(up),
                    "Debian-family root without a dpkg record of libpam-modules: "
                    f"assuming {how}")
