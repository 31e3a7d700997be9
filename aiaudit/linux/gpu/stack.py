"""What the scanned root has of the NVIDIA GPU stack, found without running or importing
anything from it: kernel module, user-space driver libraries, CUDA toolkits, forward-
compatibility packages, Python frameworks, GPUs.  Each part is read once per run
(``host.memo``); the ``gpu`` checks decide on top of it.
"""

from __future__ import annotations

import json
import re
from dataclasses import field
from typing import Any, Callable, Iterable

from aiaudit.api import Evidence
from aiaudit.core import resources
from aiaudit.core.errors import HostError, LiveStateUnavailable, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record
from aiaudit.linux import ldconf, pyenv
from aiaudit.linux.gpu import cuda, nvidia
from aiaudit.linux.packages.dpkg import upstream_version
from aiaudit.linux.packages.installed import DPKG_STATUS, dpkg_installed

MODULE_DIRS = ("updates", "extra", "kernel/nvidia*", "kernel/drivers/video",
               "kernel/drivers/gpu", "video", "weak-updates")
"""Where distributions and DKMS put ``nvidia.ko`` under ``/lib/modules/<kver>/``: DKMS
``updates/dkms``, RHEL kmods ``extra``, Ubuntu's prebuilt ``kernel/nvidia-<branch>``..."""

MODULE_BASES = ("/lib/modules", "/usr/lib/modules")
"""Where the installed kernels' module trees are (``/usr/lib`` on merged-usr roots)."""

LIBS = ("libcuda.so", "libnvidia-ml.so")
"""User-space driver libraries whose file names carry the driver version."""

SITE_PATTERNS = (
    "/usr/lib/python3*/site-packages", "/usr/lib/python3*/dist-packages",
    "/usr/lib/python3/dist-packages", "/usr/lib64/python3*/site-packages",
    "/usr/local/lib/python3*/site-packages", "/usr/local/lib/python3*/dist-packages",
    "/usr/local/lib64/python3*/site-packages",
)
"""System-wide site directories."""

CONDA_HOMES = ("/opt/conda", "/opt/miniconda3", "/opt/miniforge3", "/opt/anaconda3")
"""Conda installations: their base env and ``envs/*``."""

CONDA_IN_HOME = ("miniconda3", "anaconda3", "miniforge3")
"""Per-user conda installations (``~/miniconda3``...), for /root and /home/*."""

MAX_HOMES = 64
"""Home directories looked into (each lookup may trigger an automount on /home)."""

MAX_SITE_DIRS = 256
"""Upper bound on Python site directories inspected (bounded globbing)."""

PCI_DISPLAY_CLASSES = ("0x0300", "0x0302")
"""PCI class prefixes of VGA and 3D controllers (data-center GPUs are 3D controllers)."""

NVIDIA_PCI_VENDOR = "0x10de"


def _load_table() -> cuda.DriverTable:
    text = resources.read_text("aiaudit.checks", "data/cuda_drivers.json")
    return cuda.parse_driver_table(json.loads(text))


_TABLE: cuda.DriverTable | None = None


def driver_table() -> cuda.DriverTable:
    """The shipped minimum-driver tables (``checks/data/cuda_drivers.json``)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _load_table()
    return _TABLE


# ------------------------------------------------------------------ data
@record
class Version:
    """A driver version and where it was read."""

    version: str
    evidence: Evidence
    what: str
    """Human name of the source (``loaded kernel module``, ``module file``...)."""


@record
class KernelSide:
    """The kernel module: loaded (live) or installed (offline)."""

    loaded: Version | None = None
    installed: Version | None = None
    """From the module file of the newest kernel, or the package database."""
    open_module: bool | None = None
    kernel: str | None = None
    """Kernel release whose module was read (offline)."""
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    """Module files that could not be read."""
    kernels: tuple[str, ...] = ()
    """Kernel releases whose module trees were searched (offline), newest first."""
    unreadable: tuple[Evidence, ...] = ()
    """Where each of ``problems`` is (the module file, or the /proc, /sys file)."""

    @property
    def effective(self) -> Version | None:
        """The version that counts: loaded if live, else installed."""
        return self.loaded or self.installed


@record
class Lib:
    """A user-space driver library found in a loader directory."""

    stem: str
    version: str
    path: str
    """Host path of the versioned file (``/usr/lib/x86_64-linux-gnu/libcuda.so.535...``)."""
    via: str | None
    """The ``.so.1`` soname link that selects it, if any."""
    compat: bool
    """In a ``compat`` directory (a forward-compatibility package)."""


@record
class UserSide:
    """User-space driver libraries in the dynamic loader's search path."""

    effective: dict[str, Lib]
    """Per library stem, the one the loader picks (first directory with a soname link)."""
    others: tuple[Lib, ...]
    compat_in_path: tuple[Lib, ...]
    dirs: tuple[str, ...]
    package: Version | None = None
    """Package database version of the user-space driver, when files are absent."""


@record
class Toolkit:
    """A CUDA toolkit installation."""

    path: str
    version: cuda.CudaVersion | None
    evidence: Evidence | None
    default: bool
    """``/usr/local/cuda`` points here."""
    compat: Lib | None = None
    """``compat/libcuda.so.<ver>`` of a cuda-compat package."""
    problem: str | None = None

    @property
    def name(self) -> str:
        """Subject name: ``cuda-12.4 (/usr/local/cuda-12.4)``."""
        v = self.version.text if self.version else "?"
        return f"CUDA {v} ({self.path})"


@record
class Framework:
    """A framework build in one Python site directory."""

    name: str
    version: str
    kind: str
    """``cuda``, ``cpu`` or ``rocm``."""
    site: str
    evidence: Evidence
    cuda_major: int | None = None
    cuda: cuda.CudaVersion | None = None
    hip: str | None = None
    wheels: dict[str, str] = field(default_factory=dict)
    """``nvidia-*-cuXX`` runtime wheels next to it: name -> version."""
    problem: str | None = None

    @property
    def subject(self) -> str:
        """Subject name: ``torch 2.3.0+cu121 (/opt/conda/lib/python3.11/site-packages)``."""
        return f"{self.name} {self.version} ({self.site})"


@record
class Gpus:
    """GPUs as the live kernel sees them."""

    driver: tuple[str, ...] | None
    """``/proc/driver/nvidia/gpus/<PCI>`` entries (``None`` offline or without driver)."""
    pci: tuple[str, ...] | None
    """NVIDIA display/3D controllers on the PCI bus (``None`` offline)."""
    models: dict[str, str] = field(default_factory=dict)


# ------------------------------------------------------------------ packages
_PKG_KERNEL = lazy_pattern(r"^(nvidia-dkms-\d+(?:-server|-open)*|nvidia-kernel-dkms|"
                           r"nvidia-kernel-(?:common|source)-\d+(?:-server|-open)*|"
                           r"nvidia-kernel-open-dkms|nvidia-open-kernel-dkms|"
                           r"kmod-nvidia.*|nvidia-kmod.*|nvidia-open-kmod.*)$")
_PKG_USER = lazy_pattern(r"^(libnvidia-compute-\d+(?:-server)?|libcuda1|libnvidia-ml1|"
                         r"nvidia-driver-cuda-libs|nvidia-driver-libs|cuda-drivers(?:-\d+)?)$")


RPMDB_SQLITE = "/var/lib/rpm/rpmdb.sqlite"
RPMDB_CAP = 32 * 1024 * 1024
"""Largest rpmdb.sqlite read (a server install is 10-30 MiB): it is held twice (our copy
and SQLite's), so this bounds the scan's memory (README: under 100 MB on any host); a
bigger database is not read and the package versions come from dpkg only."""

_PKG_PREFIXES = ("nvidia", "libnvidia", "libcuda", "cuda-compat", "cuda-drivers",
                 "kmod-nvidia")


def nvidia_packages(host: Host) -> dict[str, str]:
    """NVIDIA-related installed packages: name -> version (dpkg status, and the rpm
    database where it is SQLite; see :func:`rpm_packages`)."""

    def load() -> dict[str, str]:
        out: dict[str, str] = {}
        try:
            for name, info in dpkg_installed(host, _PKG_PREFIXES).items():
                out[name] = info.get("Version", "")
        except (HostError, ParseError):
            pass
        for name, version in rpm_packages(host).items():
            if name.startswith(_PKG_PREFIXES):
                out.setdefault(name, version)
        return out

    return host.memo(("gpu-packages",), load)


def rpm_packages(host: Host) -> dict[str, str]:
    """Installed rpm packages (name -> ``[epoch:]version-release``) from
    ``/var/lib/rpm/rpmdb.sqlite`` (rpm >= 4.16: RHEL 9, Fedora >= 33), read as bytes through
    the Host and opened in memory (``sqlite3`` ``deserialize``, Python >= 3.11); ``{}`` when
    absent, too large, on Python 3.10, or in the Berkeley DB / ndb formats of older RHEL and
    SUSE, which are not read."""

    def load() -> dict[str, str]:
        try:
            size = host.stat(RPMDB_SQLITE).st_size
            if size > RPMDB_CAP:
                return {}
            data = bytearray(size)  # one copy, filled in place (no join, no regrowth)
            pos = 0
            for chunk in host.read_chunks(RPMDB_SQLITE, cap=size):
                data[pos:pos + len(chunk)] = chunk
                pos += len(chunk)
            del data[pos:]
        except HostError:
            return {}
        if not data.startswith(b"SQLite format 3\0") or len(data) < 100:
            return {}
        import sqlite3  # only now: most roots have no rpmdb, and the import costs ~3 ms

        from aiaudit.linux.packages import rpm as rpmheader  # likewise

        data[18:20] = b"\x01\x01"  # WAL -> rollback journal: an in-memory copy has no -wal
        conn = sqlite3.connect(":memory:")
        if not hasattr(conn, "deserialize"):
            conn.close()
            return {}
        out: dict[str, str] = {}
        try:
            conn.deserialize(data)
            for (blob,) in conn.execute("SELECT blob FROM Packages"):
                try:
                    fields = rpmheader.parse_header(bytes(blob))
                except ParseError:
                    continue
                if "name" in fields:
                    out.setdefault(fields["name"], rpmheader.evr(fields))
        except sqlite3.Error:
            return out
        finally:
            conn.close()
        return out

    return host.memo(("rpm-packages",), load)


def _dpkg_names(host: Host) -> set[str]:
    """NVIDIA packages (``_PKG_PREFIXES``) installed through dpkg."""
    try:
        return set(dpkg_installed(host, _PKG_PREFIXES))
    except (HostError, ParseError):
        return set()


def _pkg_version(pkgs: dict[str, str], pattern: Callable[[], re.Pattern[str]]
                 ) -> tuple[str, str] | None:
    """The first package (by name) that ``pattern`` (a :func:`lazy_pattern`) matches and
    whose upstream version is a driver version; the pattern is compiled only when there
    are packages to match (a host without NVIDIA packages never needs it)."""
    for name in sorted(pkgs):
        if pattern().match(name):
            up = upstream_version(pkgs[name])
            if nvidia.is_version(up):
                return name, up
    return None


# ------------------------------------------------------------------ kernel side
def _kver_key(name: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.-]", name))


def _module_files(host: Host, kroot: str) -> list[str]:
    found: list[str] = []
    todo: list[tuple[str, int]] = []
    for sub in MODULE_DIRS:
        todo += [(d, 0) for d in host.glob(f"{kroot}/{sub}") if host.is_dir(d)]
    seen: set[str] = set()
    budget = 2000
    while todo and budget > 0:
        d, depth = todo.pop(0)
        if d in seen:
            continue
        seen.add(d)
        budget -= 1
        try:
            names = host.listdir(d)
        except HostError:
            continue
        for n in names:
            p = f"{d}/{n}"
            if re.match(r"^nvidia\.ko(\.(xz|gz|zst))?$", n) and host.is_file(p):
                found.append(p)
            elif depth < 4 and "." not in n and host.is_dir(p):
                todo.append((p, depth + 1))
    return found


def _module_version(host: Host, path: str) -> str | None:
    """``modinfo -F version`` of module file ``path``
    (:func:`aiaudit.linux.kmod.modinfo.file_version`, imported where a module file is
    read)."""
    from aiaudit.linux.kmod import modinfo as elfmodinfo

    return elfmodinfo.file_version(host, path)


def kernel_side(host: Host) -> KernelSide:
    """The nvidia kernel module version: live from /proc or /sys; otherwise from the
    module file of the newest installed kernel, else the package database."""
    return host.memo(("gpu-kernel",), lambda: _kernel_side(host))


@record
class _Found:
    """What one part of the kernel-side search found: a version, notes and problems (with
    where each problem is)."""

    version: Version | None = None
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    unreadable: tuple[Evidence, ...] = ()


def _loaded_module(host: Host) -> tuple[_Found, bool | None]:
    """The loaded module's version (live): ``/proc/driver/nvidia/version``, else
    ``/sys/module/nvidia/version``; and whether it is the open kernel module."""
    proc, sysmod = "/proc/driver/nvidia/version", "/sys/module/nvidia/version"
    try:
        pv = nvidia.parse_proc_version(host.read_text(proc))
        return _Found(Version(pv.version, Evidence.runtime(proc, pv.line),
                              "loaded kernel module")), pv.open
    except NotFound:
        pass
    except (HostError, ParseError) as exc:
        return _Found(problems=(str(exc),), unreadable=(Evidence.runtime(proc, str(exc)),)), None
    try:
        v = host.read_text(sysmod).strip()
        nvidia.parse_version(v)
        return _Found(Version(v, Evidence.runtime(sysmod, v), "loaded kernel module")), None
    except NotFound:
        return _Found(notes=("the nvidia kernel module is not loaded",)), None
    except (HostError, ParseError) as exc:
        return _Found(problems=(str(exc),),
                      unreadable=(Evidence.runtime(sysmod, str(exc)),)), None


def _kernel_roots(host: Host) -> dict[str, str]:
    """Kernel release -> its module tree, over :data:`MODULE_BASES` (the first base that
    has a release wins)."""
    kroots: dict[str, str] = {}
    for base in MODULE_BASES:
        for k in host.listdir(base):
            if host.is_dir(f"{base}/{k}"):
                kroots.setdefault(k, f"{base}/{k}")
    return kroots


def _module_file_version(host: Host, kernel: str, files: list[str]) -> _Found:
    """The version of the first readable ``nvidia.ko*`` of ``files`` (module files of
    ``kernel``); notes and problems for those that could not be read."""
    from aiaudit.linux.kmod.modinfo import UnsupportedCompression  # files exist: read

    notes: list[str] = []
    problems: list[str] = []
    unreadable: list[Evidence] = []
    for path in files:
        try:
            ver = _module_version(host, path)
        except UnsupportedCompression:
            notes.append(f"{path} is compressed with zstd, which this Python cannot "
                         "read; version from the package database instead")
            continue
        except (HostError, ParseError) as exc:
            problems.append(f"{path}: {exc}")
            unreadable.append(Evidence.file(path, None, str(exc)))
            continue
        if ver and nvidia.is_version(ver):
            return _Found(Version(ver, Evidence.file(path, None, f"version={ver}"),
                                  f"module file for kernel {kernel}"),
                          tuple(notes), tuple(problems), tuple(unreadable))
    return _Found(None, tuple(notes), tuple(problems), tuple(unreadable))


def _installed_module(host: Host, kroots: dict[str, str]
                      ) -> tuple[_Found, str | None, tuple[str, ...]]:
    """(the module file of the newest kernel that has one, its kernel release, the
    releases searched, newest first): the search stops at the first kernel with any
    ``nvidia.ko*``, readable or not."""
    searched: list[str] = []
    for k in sorted(kroots, key=_kver_key, reverse=True):
        searched.append(k)
        files = _module_files(host, kroots[k])
        if files:
            found = _module_file_version(host, k, files)
            return found, (k if found.version else None), tuple(searched)
    return _Found(), None, tuple(searched)


def _package_module(host: Host, kroots: dict[str, str], problems: tuple[str, ...]
                    ) -> _Found:
    """The kernel module's version from the package database (DKMS or kmod package), with
    a note when module trees exist but hold no nvidia.ko."""
    pkgs = nvidia_packages(host)
    hit = _pkg_version(pkgs, _PKG_KERNEL)
    if not hit:
        return _Found()
    db = DPKG_STATUS if hit[0] in _dpkg_names(host) else RPMDB_SQLITE
    version = Version(hit[1], Evidence.file(db, None, f"{hit[0]} {pkgs[hit[0]]}"),
                      f"package {hit[0]}")
    notes: tuple[str, ...] = ()
    if kroots and not problems:
        notes = (f"{hit[0]} is installed but no nvidia.ko was found for any kernel under "
                 f"/lib/modules (DKMS build missing?)",)
    return _Found(version, notes)


def _kernel_side(host: Host) -> KernelSide:
    loaded, open_module = _loaded_module(host) if host.live else (_Found(), None)
    kroots = _kernel_roots(host)
    # A loaded module decides; module files are only read (tens of MiB) when none is.
    inst: _Found = _Found()
    kernel: str | None = None
    searched: tuple[str, ...] = ()
    if not loaded.version:
        inst, kernel, searched = _installed_module(host, kroots)
    problems = loaded.problems + inst.problems
    pkg = _Found()
    if inst.version is None and loaded.version is None:
        pkg = _package_module(host, kroots, problems)
    return KernelSide(loaded.version, inst.version or pkg.version, open_module, kernel,
                      loaded.notes + inst.notes + pkg.notes, problems, searched,
                      loaded.unreadable + inst.unreadable)


def module_search_evidence(ks: KernelSide) -> Evidence:
    """``default`` evidence: where no nvidia kernel module was found (the module
    directories of :data:`MODULE_DIRS` of each kernel under :data:`MODULE_BASES`, and the
    package database)."""
    bases = ", ".join(f"{b.lstrip('/')}/<kernel>" for b in MODULE_BASES)
    kernels = (f"none for kernel {', '.join(ks.kernels)}" if ks.kernels
               else "no kernel installed")
    return Evidence.default(f"nvidia kernel module: nvidia.ko[.xz|.gz|.zst] in "
                            f"{', '.join(MODULE_DIRS)} of {bases}, and the "
                            "package database", kernels)


# ------------------------------------------------------------------ user side
def loader_dirs(host: Host) -> list[str]:
    """Directories the dynamic loader searches via its cache: /etc/ld.so.conf (with
    includes, in order), then the trusted defaults; canonical host paths, no duplicates."""

    def load() -> list[str]:
        out: list[str] = []

        def add(d: str) -> None:
            try:
                real = host.resolve(d)
            except HostError:
                return
            if real not in out and host.is_dir(real):
                out.append(real)

        def read(path: str, depth: int) -> None:
            if depth > 8:
                return
            try:
                text = host.read_text(path, cap=1024 * 1024)
            except HostError:
                return
            for d in ldconf.parse(text, path):
                if d.kind == "dir":
                    add(d.value)
                else:
                    for inc in host.glob(d.value):
                        read(inc, depth + 1)

        read("/etc/ld.so.conf", 0)
        for d in ldconf.DEFAULT_DIRS:
            add(d)
        return out

    return host.memo(("ld-dirs",), load)


def _is_compat_dir(d: str) -> bool:
    return d.rstrip("/").endswith("/compat")


def user_side(host: Host) -> UserSide:
    """libcuda / libnvidia-ml versions as the loader would pick them."""
    return host.memo(("gpu-user",), lambda: _user_side(host))


def _libs_in(host: Host, d: str, stem: str) -> tuple[Lib | None, list[Lib]]:
    """(the library the ``.so.1`` link in ``d`` selects, every versioned file in ``d``)."""
    compat = _is_compat_dir(d)
    # one listing per directory and run: it is asked for each stem, and the multiarch
    # library directory holds a thousand names
    names = host.memo(("gpu-listdir", d), lambda: host.listdir(d))
    files = [Lib(stem, v, f"{d}/{n}", None, compat)
             for n in names if (v := nvidia.lib_version(n, stem))
             and host.is_file(f"{d}/{n}")]
    link = f"{d}/{stem}.1"
    target = host.readlink(link)
    chosen: Lib | None = None
    if target is not None and host.exists(link):
        v = nvidia.lib_version(target.rsplit("/", 1)[-1], stem)
        if v:
            chosen = Lib(stem, v, f"{d}/{target}" if not target.startswith("/") else target,
                         link, compat)
    elif host.is_file(link) and files:
        chosen = files[0]
    return chosen, files


def _user_side(host: Host) -> UserSide:
    dirs = loader_dirs(host)
    effective: dict[str, Lib] = {}
    every: list[Lib] = []
    compat_in_path: list[Lib] = []
    for stem in LIBS:
        first_file: Lib | None = None
        for d in dirs:
            chosen, files = _libs_in(host, d, stem)
            if _is_compat_dir(d):
                compat_in_path += [chosen] if chosen else files[:1]
                continue
            every += files
            if chosen and stem not in effective:
                effective[stem] = chosen
            if files and first_file is None:
                first_file = files[0]
        if stem not in effective and first_file is not None:
            effective[stem] = first_file
    others = tuple(lib for lib in every
                   if lib.stem in effective and lib.version != effective[lib.stem].version)
    package: Version | None = None
    if not effective:
        pkgs = nvidia_packages(host)
        hit = _pkg_version(pkgs, _PKG_USER)
        if hit:
            db = DPKG_STATUS if hit[0] in _dpkg_names(host) else RPMDB_SQLITE
            package = Version(hit[1], Evidence.file(db, None, f"{hit[0]} {pkgs[hit[0]]}"),
                              f"package {hit[0]}")
    return UserSide(effective, others, tuple(compat_in_path), tuple(dirs), package)


# ------------------------------------------------------------------ toolkits
def toolkits(host: Host) -> list[Toolkit]:
    """Every ``/usr/local/cuda-*`` (plus ``/usr/local/cuda`` and ``/opt/cuda``, also where
    they link into a site directory's ``nvidia/`` wheel tree), with its version (read, never
    run: :func:`_toolkit_version`) and forward-compatibility libcuda."""
    return host.memo(("gpu-toolkits",), lambda: _toolkits(host))


NVCC_READ_CAP = 256 * 1024 * 1024
"""Largest ``nvcc`` binary searched for its banner (CUDA 13's is 30 MiB)."""

CUDA_H_HEAD = 512 * 1024
"""Bytes of ``cuda.h`` read for ``#define CUDA_VERSION`` (line ~260 of a 1 MiB file)."""

_Found3 = tuple[cuda.CudaVersion | None, Evidence | None, str | None]


def _from_version_files(host: Host, real: str) -> _Found3 | None:
    """``version.json`` (CUDA >= 11.1), else ``version.txt``; ``None`` when neither exists."""
    for fn, parse in (("version.json", cuda.parse_version_json),
                      ("version.txt", cuda.parse_version_txt)):
        path = f"{real}/{fn}"
        try:
            text = host.read_text(path, cap=1024 * 1024)
        except NotFound:
            continue
        except HostError as exc:
            return None, None, str(exc)
        try:
            version = parse(text)
        except ParseError as exc:
            return None, None, f"{path}: {exc}"
        return version, Evidence.file(path, None, version.raw), None
    return None


def _wheel_dirs(real: str) -> list[str]:
    """Where the ``*.dist-info`` of a toolkit assembled from pip wheels are: in it, in its
    ``dist-info`` directory, or (the toolkit is ``<site>/nvidia/cu13`` or
    ``<site>/nvidia/cuda_nvcc``) in the site directory two levels up."""
    out = [real, f"{real}/dist-info"]
    parts = real.rsplit("/", 2)
    if len(parts) == 3 and parts[1] == "nvidia" and parts[0].endswith(
            ("site-packages", "dist-packages")):
        out.append(parts[0])
    return out


def _from_wheels(host: Host, real: str) -> _Found3 | None:
    """The CUDA release of the ``nvidia-cuda-runtime`` (else ``nvidia-cuda-nvcc``) wheel
    the toolkit was assembled from, by its ``*.dist-info`` name."""
    found: dict[str, tuple[cuda.CudaVersion, str]] = {}
    for d in _wheel_dirs(real):
        try:
            names = host.listdir(d) if host.is_dir(d) else []
        except HostError:
            continue
        for n in names:
            hit = pyenv.dist_info(n) if n.endswith(".dist-info") else None
            v = cuda.wheel_release(*hit) if hit else None
            if hit and v:
                found.setdefault(hit[0].split("-")[2], (v, f"{d}/{n}"))
    for kind in ("runtime", "nvcc"):
        if kind in found:
            v, path = found[kind]
            return v, Evidence.file(path, None, f"{path.rsplit('/', 1)[-1]}: CUDA {v.text}"), None
    return None


def _from_binaries(host: Host, real: str) -> _Found3 | None:
    """``include/cuda.h``'s ``CUDA_VERSION``, else the banner inside ``bin/nvcc`` (read,
    never run)."""
    h = f"{real}/include/cuda.h"
    if host.is_file(h):
        try:
            v = cuda.parse_cuda_h(host.read_range(h, 0, CUDA_H_HEAD).decode("latin-1"))
            return v, Evidence.file(h, None, v.raw), None
        except (HostError, ParseError):
            pass
    nvcc = f"{real}/bin/nvcc"
    if not host.is_file(nvcc):
        return None
    tail = b""
    try:
        for chunk in host.read_chunks(nvcc, cap=NVCC_READ_CAP):
            found = cuda.nvcc_banner(tail + chunk)
            if found:
                return found, Evidence.file(nvcc, None, found.raw), None
            tail = chunk[-cuda.NVCC_BANNER_MAX:]
    except HostError as exc:
        return None, None, f"{nvcc}: {exc}"
    return None


def _toolkit_version(host: Host, real: str) -> _Found3 | None:
    """(version, evidence, problem) of the toolkit at ``real``, from the first source that
    has one (:mod:`aiaudit.linux.gpu.cuda`); ``None`` when nothing says it is a toolkit."""
    for source in (_from_version_files, _from_wheels, _from_binaries):
        got = source(host, real)
        if got is not None:
            return got
    if host.exists(f"{real}/bin/nvcc") or host.is_dir(f"{real}/lib64"):
        return None, None, (f"{real}: no version.json, version.txt, CUDA wheel dist-info, "
                            "cuda.h CUDA_VERSION or nvcc banner")
    return None  # not a toolkit (an empty or unrelated directory)


def _toolkits(host: Host) -> list[Toolkit]:
    default: str | None = None
    try:
        if host.lstat_exists("/usr/local/cuda"):
            default = host.resolve("/usr/local/cuda")
    except HostError:
        default = None
    cands = [*host.glob("/usr/local/cuda-*"), "/usr/local/cuda", "/opt/cuda"]
    seen: set[str] = set()
    out: list[Toolkit] = []
    for c in cands:
        if not host.is_dir(c):
            continue
        try:
            real = host.resolve(c)
        except HostError:
            continue
        if real in seen:
            continue
        seen.add(real)
        got = _toolkit_version(host, real)
        if got is None:
            continue
        version, evidence, problem = got
        compat: Lib | None = None
        cdir = f"{real}/compat"
        if host.is_dir(cdir):
            chosen, files = _libs_in(host, cdir, "libcuda.so")
            compat = chosen or (files[0] if files else None)
        out.append(Toolkit(real, version, evidence, real == default, compat, problem))
    return out


# ------------------------------------------------------------------ frameworks
def site_dirs(host: Host, envs: Iterable[str], venv_roots: Iterable[str],
              homes: bool = True) -> list[str]:
    """Python site directories to inspect: the ruleset's envs (a prefix or a site dir),
    venvs under the given roots, conda envs (system-wide, /root's and, with ``homes``, those
    of the first :data:`MAX_HOMES` users under /home) and the system ones; bounded."""
    pats: list[str] = []
    conda = list(CONDA_HOMES) + [f"/root/{c}" for c in CONDA_IN_HOME]
    if homes:
        conda += [f"/home/{u}/{c}" for u in host.listdir("/home")[:MAX_HOMES]
                  for c in CONDA_IN_HOME]
    for e in envs:
        e = e.rstrip("/")
        if e.endswith(("site-packages", "dist-packages")):
            pats.append(e)
        else:
            pats += [f"{e}/lib/python3*/site-packages", f"{e}/lib/python3*/dist-packages"]
    for r in venv_roots:
        r = r.rstrip("/")
        pats += [f"{r}/lib/python3*/site-packages", f"{r}/*/lib/python3*/site-packages"]
    for c in conda:
        pats += [f"{c}/lib/python3*/site-packages", f"{c}/envs/*/lib/python3*/site-packages"]
    pats += list(SITE_PATTERNS)
    out: list[str] = []
    seen: set[str] = set()
    for pat in pats:
        for d in host.glob(pat):
            try:
                real = host.resolve(d)
            except HostError:
                continue
            if real in seen or not host.is_dir(real):
                continue
            seen.add(real)
            out.append(real)
            if len(out) >= MAX_SITE_DIRS:
                return out
    return out


def frameworks(host: Host, envs: Iterable[str] = (), venv_roots: Iterable[str] = (),
               homes: bool = True) -> list[Framework]:
    """PyTorch and JAX CUDA builds in every site directory (see :func:`site_dirs`)."""
    key = ("gpu-frameworks", tuple(envs), tuple(venv_roots), homes)
    return host.memo(key, lambda: _frameworks(host, tuple(envs), tuple(venv_roots), homes))


def _frameworks(host: Host, envs: tuple[str, ...], roots: tuple[str, ...],
                homes: bool) -> list[Framework]:
    out: list[Framework] = []
    for site in site_dirs(host, envs, roots, homes):
        try:
            names = host.listdir(site)
        except HostError:
            continue
        dists: dict[str, tuple[str, str]] = {}
        for n in names:
            if n.endswith(".dist-info"):
                hit = pyenv.dist_info(n)
                if hit:
                    dists[hit[0]] = (hit[1], f"{site}/{n}")
        wheels = {n: v for n, (v, _) in dists.items()
                  if n.startswith("nvidia-") and pyenv.cuda_major_of(n)}
        runtime = _runtime_of(wheels)
        if "torch" in names and host.is_file(f"{site}/torch/version.py"):
            out.append(_torch(host, site, wheels, runtime))
        jax = _jax(dists)
        if jax:
            n, v, path, major = jax
            cv = runtime if runtime and runtime.major == major else None
            out.append(Framework(n, v, "cuda", site, Evidence.file(path, None, f"{n} {v}"),
                                 major, cv, wheels=wheels))
    return out


def _jax(dists: dict[str, tuple[str, str]]) -> tuple[str, str, str, int] | None:
    """The JAX CUDA build of a site directory: the ``jax-cudaNN-plugin`` (or its
    ``-pjrt`` companion, or an old ``jaxlib`` with a ``+cudaNN`` local version)."""
    for n in sorted(dists, key=lambda n: (not n.endswith("-plugin"), n)):
        if n.startswith("jax-cuda") and (major := pyenv.cuda_major_of(n)):
            return n, dists[n][0], dists[n][1], major
    if "jaxlib" in dists:
        m = re.search(r"\+cuda(\d{2})", dists["jaxlib"][0])
        if m:
            return "jaxlib", dists["jaxlib"][0], dists["jaxlib"][1], int(m.group(1))
    return None


def _runtime_of(wheels: dict[str, str]) -> cuda.CudaVersion | None:
    for n, v in wheels.items():
        if n.startswith("nvidia-cuda-runtime-cu"):
            try:
                return cuda.cuda_version(v, exact_update=False)
            except ParseError:
                return None
    return None


def _torch(host: Host, site: str, wheels: dict[str, str],
           runtime: cuda.CudaVersion | None) -> Framework:
    path = f"{site}/torch/version.py"
    try:
        tb = pyenv.parse_torch_version(host.read_text(path, cap=1024 * 1024))
    except (HostError, ParseError) as exc:
        return Framework("torch", "?", "cpu", site, Evidence.file(path), problem=str(exc))
    ev = Evidence.file(path, None, f"__version__={tb.version!r} cuda={tb.cuda!r} "
                                   f"hip={tb.hip!r}")
    if tb.kind != "cuda":
        return Framework("torch", tb.version, tb.kind, site, ev, hip=tb.hip, wheels=wheels)
    try:
        cv = cuda.cuda_version(tb.cuda or "")
    except ParseError as exc:
        return Framework("torch", tb.version, "cuda", site, ev, wheels=wheels,
                         problem=f"{path}: cuda = {tb.cuda!r}: {exc}")
    if runtime and runtime.major == cv.major and (runtime.minor > cv.minor):
        cv = runtime  # a newer runtime wheel was installed next to torch
    return Framework("torch", tb.version, "cuda", site, ev, cv.major, cv, wheels=wheels)


# ------------------------------------------------------------------ GPUs
def gpus(host: Host) -> Gpus:
    """GPUs the driver sees and NVIDIA GPUs on the PCI bus (live only)."""

    def load() -> Gpus:
        if not host.live:
            return Gpus(None, None)
        driver: tuple[str, ...] | None = None
        models: dict[str, str] = {}
        try:
            if host.is_dir("/proc/driver/nvidia/gpus"):
                driver = tuple(host.listdir("/proc/driver/nvidia/gpus"))
                for bus in driver:
                    try:
                        info = host.read_text(f"/proc/driver/nvidia/gpus/{bus}/information")
                    except HostError:
                        continue
                    m = re.search(r"^Model:\s*(.+)$", info, re.M)
                    if m:
                        models[bus] = m.group(1).strip()
        except LiveStateUnavailable:
            driver = None
        pci: list[str] = []
        for dev in host.listdir("/sys/bus/pci/devices"):
            base = f"/sys/bus/pci/devices/{dev}"
            try:
                vendor = host.read_text(f"{base}/vendor").strip()
                klass = host.read_text(f"{base}/class").strip()
            except HostError:
                continue
            if vendor == NVIDIA_PCI_VENDOR and klass.startswith(PCI_DISPLAY_CLASSES):
                pci.append(dev)
        return Gpus(driver, tuple(pci), models)

    return host.memo(("gpu-gpus",), load)
