"""The limits files one pam_limits call reads, in order, for a PAM build.

``pam_limits.c`` (``parse_config_file`` and the ``limits.d`` glob in ``pam_sm_open_session``):
the ``conf=`` file alone when given (limits.d is then not read); else
``/etc/security/limits.conf`` (vendordir builds, PAM >= 1.5.3 outside Debian: else
``/usr/lib/security/limits.conf``) then every ``*.conf`` of ``limits.d`` (vendordir: the
``/usr/lib`` directory too, an /etc name hiding the vendor one) in ``strcmp`` order.  A file
that cannot be opened fails the session and stops the reading; a missing limits.conf does so
only before PAM 1.5.3.  Lines are parsed by :func:`aiaudit.linux.pam_limits.conf.parse`.
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, NotFound, NotRegularFile
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.packages import dpkg
from aiaudit.linux.packages.installed import dpkg_version
from aiaudit.linux.pam_limits import conf as lp

LIMITS_CONF = "/etc/security/limits.conf"
LIMITS_D = "/etc/security/limits.d"
VENDOR_LIMITS_CONF = "/usr/lib/security/limits.conf"
VENDOR_LIMITS_D = "/usr/lib/security/limits.d"

Read = list[lp.Line] | str
"""A file's parsed lines, or (a ``str``) the read error that fails the session."""


def limits_files(host: Host, build: PamBuild, conf: str | None
                 ) -> tuple[list[tuple[str, Read]], list[str]]:
    """The files pam_limits reads, in order, parsed; a ``str`` entry is a read error that
    fails the session.  Second value: notes for the message."""
    notes: list[str] = []
    out: list[tuple[str, Read]] = []
    if conf:
        got = _read(host, conf, notes)
        out.append((conf, got if got is not None else "no such file (conf= argument)"))
        notes.append(f"conf={conf}: limits.d is not read")
        return out, notes
    main = LIMITS_CONF
    got = _read(host, main, notes)
    if got is None and build.vendordir:
        main = VENDOR_LIMITS_CONF
        got = _read(host, main, notes)
    if got is None:
        if build.missing_conf_fatal:
            out.append((LIMITS_CONF, "no such file (PAM < 1.5.3 refuses every session "
                                     "without it; limits.d is then not read)"))
            return out, notes
        notes.append(f"{LIMITS_CONF} absent")
    else:
        out.append((main, got))
    out += _limits_d(host, build, notes)
    return out, notes


def _read(host: Host, path: str, notes: list[str]) -> Read | None:
    """One file parsed, ``None`` when it does not exist, a ``str`` when it cannot be read."""
    try:
        return lp.parse(host.read_bytes(path), path)
    except NotFound:
        return None
    except NotRegularFile as exc:
        if host.is_dir(path):
            notes.append(f"{path} is a directory: read as empty")
            return []
        return f"{exc} (the module would block or fail on it)"
    except HostError as exc:
        return str(exc)


def _limits_d(host: Host, build: PamBuild, notes: list[str]) -> list[tuple[str, Read]]:
    """The limits.d files in read order, up to the first that fails the session."""
    names: dict[str, str] = {}
    for d in (LIMITS_D, VENDOR_LIMITS_D) if build.vendordir else (LIMITS_D,):
        for fn in host.listdir(d):
            if fn.endswith(".conf") and not fn.startswith(".") and fn not in names:
                names[fn] = f"{d}/{fn}"
    out: list[tuple[str, Read]] = []
    for fn in sorted(names, key=lambda s: s.encode("utf-8", "surrogateescape")):
        path = names[fn]
        if host.readlink(path) is not None and not host.exists(path):
            out.append((path, "dangling symlink (fopen fails: the session is refused)"))
            break
        got = _read(host, path, notes)
        if got is None:
            got = "no such file"
        out.append((path, got))
        if isinstance(got, str):
            break
    return out


def limits_search(build: PamBuild) -> str:
    """Where :func:`limits_files` looks for the files pam_limits reads (no ``conf=``), for
    a ``default`` evidence text: ``etc/security/limits.conf, etc/security/limits.d/*.conf``
    (with the /usr/lib/security fallbacks of a vendordir build), root-relative."""
    confs = (LIMITS_CONF, VENDOR_LIMITS_CONF) if build.vendordir else (LIMITS_CONF,)
    dirs = (LIMITS_D, VENDOR_LIMITS_D) if build.vendordir else (LIMITS_D,)
    return ", ".join([c.lstrip("/") for c in confs] + [f"{d.lstrip('/')}/*.conf" for d in dirs])


def limits_file_evidence(host: Host, path: str, what: str) -> Evidence:
    """Evidence for a file pam_limits reads that decided: ``file`` where it exists (a
    dangling link or unreadable file is there to point at), else ``default``."""
    if host.exists(path) or host.readlink(path) is not None:
        return Evidence.file(path, None, what)
    return Evidence.default(path.lstrip("/"), what)


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
