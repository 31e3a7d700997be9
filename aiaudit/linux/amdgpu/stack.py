"""What the scanned root has of the AMD GPU stack, found without running or importing
anything from it: the amdgpu kernel driver, the ROCm releases, and Python frameworks' ROCm
builds.  Each part is read once per run (``host.memo``).

- The kernel driver.  AMD ships amdgpu out of tree as ``amdgpu-dkms``, whose module carries
  a version (``modinfo -F version``; ``/sys/module/amdgpu/version`` while loaded: the
  in-kernel driver has none, MODULE_VERSION is only set in the DKMS tree).  The package
  version names the release it came with: ``1:6.8.5.60202-2041575.22.04`` is module 6.8.5
  of ROCm 6.2.2 (``60202``), ``6.14.14.30100100-...`` module 6.14.14 of AMD GPU Driver
  30.10.1.  Live the loaded module decides; offline the package (dpkg or rpmdb.sqlite), else
  the module file DKMS installed (``/lib/modules/<kernel>/updates/dkms/amdgpu.ko*``), else
  the distribution kernel's own amdgpu.
- ROCm.  Each release installs into ``/opt/rocm-<version>`` with ``.info/version``
  (``6.2.0-66``); ``/opt/rocm`` links to the default one (update-alternatives).  Without the
  files, the ``rocm-core`` package's version (``6.2.0.60200-66~22.04``).
- Frameworks.  PyTorch's ROCm wheels say ``hip = '6.2.41133-dd7f95766'`` in
  ``torch/version.py`` and carry ``+rocm6.2`` in their version; they bundle the ROCm
  user-space libraries, so only the kernel driver must support their release.
"""

from __future__ import annotations

import re

from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record
from aiaudit.linux.amdgpu import table as tb
from aiaudit.linux.amdgpu.packages import amd_packages
from aiaudit.linux.packages.dpkg import upstream_version

MODULE_BASES = ("/lib/modules", "/usr/lib/modules")
DKMS_DIRS = ("updates/dkms", "updates", "extra")
"""Where DKMS (Debian/Ubuntu ``updates/dkms``, RHEL ``extra``) installs amdgpu.ko."""
_DKMS_VERSION = lazy_pattern(r"(\d{1,3}\.\d{1,3}\.\d{1,4})\.(\d{5}|\d{8})")


@record
class Kmd:
    """The amdgpu kernel driver that runs (live) or will run (offline)."""

    kind: str
    """``dkms`` (AMD's out-of-tree driver), ``inbox`` (the distribution kernel's) or
    ``none`` (no amdgpu module)."""
    version: str | None
    """The module version (``6.12.12``); ``None`` for the in-kernel driver."""
    line: str | None
    """The KMD release line the compatibility table knows it by (``6.4``, ``30.10``)."""
    evidence: Evidence
    what: str
    """Where it was read (``loaded module``, ``package amdgpu-dkms``...)."""
    release: str | None = None
    """The release the package version names (``6.4.4``), when known."""
    kernel: str | None = None
    """The kernel release of an in-kernel driver."""

    @property
    def display(self) -> str:
        """``amdgpu-dkms 6.12.12 (ROCm 6.4 driver)`` or ``in-kernel amdgpu of 6.8.0-45``."""
        if self.kind == "inbox":
            return f"in-kernel amdgpu of kernel {self.kernel or '?'}"
        if self.kind == "none":
            return "no amdgpu driver"
        rel = f" (driver of {_release_name(self.line)})" if self.line else ""
        return f"amdgpu {self.version}{rel}"


def _release_name(line: str | None) -> str:
    if line is None:
        return "an unknown release"
    return f"AMD GPU Driver {line}" if tb.line_key(line)[0] >= 30 else f"ROCm {line}"


@record
class RocmInstall:
    """A ROCm user-space release."""

    path: str
    version: str | None
    evidence: Evidence
    default: bool
    """``/opt/rocm`` points here."""
    problem: str | None = None

    @property
    def name(self) -> str:
        """Subject name: ``ROCm 6.2.0 (/opt/rocm-6.2.0)``."""
        return f"ROCm {self.version or '?'} ({self.path})"


@record
class RocmFramework:
    """A framework's ROCm build in one Python site directory."""

    name: str
    version: str
    rocm: str | None
    """The ROCm release it was built against (``6.2.41133-dd7f95766``, ``6.2``)."""
    site: str
    evidence: Evidence

    @property
    def subject(self) -> str:
        """``torch 2.5.1+rocm6.2 (/opt/venvs/x/lib/python3.11/site-packages)``."""
        return f"{self.name} {self.version} ({self.site})"


# ------------------------------------------------------------------ packages
def dkms_package_version(version: str) -> tuple[str, str | None] | None:
    """(module version, release) from an amdgpu-dkms package version:
    ``1:6.8.5.60202-2041575.22.04`` -> ``("6.8.5", "6.2.2")``; ``None`` for another shape."""
    up = upstream_version(version)
    m = _DKMS_VERSION().fullmatch(up)
    if not m:
        return None
    return m.group(1), tb.release_of_suffix(m.group(2))


# ------------------------------------------------------------------ kernel driver
def _line_of(t: tb.Table, version: str | None, release: str | None) -> str | None:
    if release:
        got = tb.kmd_of_release(t, release)
        if got:
            return got
    return t.modules.get(version or "")


def kmd(host: Host) -> Kmd:
    """The amdgpu driver: live the loaded module, offline the installed one."""
    return host.memo(("amdgpu-kmd",), lambda: _live_kmd(host) if host.live else
                     _offline_kmd(host))


def _live_kmd(host: Host) -> Kmd:
    t = tb.table()
    if not host.is_dir("/sys/module/amdgpu"):
        return Kmd("none", None, None, Evidence.runtime("/sys/module/amdgpu", "not loaded"),
                   "loaded modules")
    path = "/sys/module/amdgpu/version"
    try:
        v = host.read_text(path).strip()
    except NotFound:
        rel = (host.try_read_text("/proc/sys/kernel/osrelease") or "").strip() or None
        return Kmd("inbox", None, None, Evidence.runtime(path, "absent: the in-kernel driver"),
                   "loaded module", kernel=rel)
    except HostError as exc:
        return Kmd("none", None, None, Evidence.runtime(path, str(exc)), "loaded module")
    pkg = amd_packages(host).get("amdgpu-dkms")
    release = None
    if pkg:
        got = dkms_package_version(pkg[0])
        if got and got[0] == v:
            release = got[1]
    return Kmd("dkms", v, _line_of(t, v, release), Evidence.runtime(path, v), "loaded module",
               release)


def _kernel_roots(host: Host) -> list[tuple[str, str]]:
    """(release, module tree) of every installed kernel, newest first."""
    seen: dict[str, str] = {}
    for base in MODULE_BASES:
        for k in host.listdir(base):
            if host.is_dir(f"{base}/{k}"):
                seen.setdefault(k, f"{base}/{k}")
    return sorted(seen.items(), key=lambda kv: _kver_key(kv[0]), reverse=True)


def _kver_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.-]", release))


def _module_file(host: Host, tree: str) -> str | None:
    for sub in DKMS_DIRS:
        for ext in ("", ".xz", ".gz", ".zst"):
            p = f"{tree}/{sub}/amdgpu.ko{ext}"
            if host.is_file(p):
                return p
    return None


def _module_file_version(host: Host, path: str) -> str | None:
    """``modinfo -F version`` of the module file, read as the NVIDIA stack reads nvidia.ko
    (:func:`aiaudit.linux.kmod.modinfo.file_version`)."""
    from aiaudit.linux.kmod import modinfo as elfmodinfo

    return elfmodinfo.file_version(host, path)


def _offline_kmd(host: Host) -> Kmd:
    t = tb.table()
    pkg = amd_packages(host).get("amdgpu-dkms")
    if pkg:
        got = dkms_package_version(pkg[0])
        if got:
            return Kmd("dkms", got[0], _line_of(t, got[0], got[1]),
                       Evidence.file(pkg[1], None, f"amdgpu-dkms {pkg[0]}"),
                       "package amdgpu-dkms", got[1])
    roots = _kernel_roots(host)
    for rel, tree in roots:
        path = _module_file(host, tree)
        if path is None:
            continue
        try:
            v = _module_file_version(host, path)
        except (HostError, ParseError) as exc:
            return Kmd("dkms", None, None, Evidence.file(path, None, str(exc)),
                       f"module file for kernel {rel}")
        return Kmd("dkms", v, _line_of(t, v, None), Evidence.file(path, None, f"version={v}"),
                   f"module file for kernel {rel}")
    for rel, tree in roots:
        for ext in ("", ".xz", ".gz", ".zst"):
            p = f"{tree}/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko{ext}"
            if host.is_file(p):
                return Kmd("inbox", None, None, Evidence.file(p), f"kernel {rel}",
                           kernel=rel)
    where = ", ".join(f"{b.lstrip('/')}/<kernel>" for b in MODULE_BASES)
    return Kmd("none", None, None, Evidence.default(
        f"amdgpu kernel module: amdgpu-dkms package, amdgpu.ko under {where}",
        "none found"), "module search")


# ------------------------------------------------------------------ ROCm
def rocm_installs(host: Host) -> list[RocmInstall]:
    """Every ROCm release under ``/opt`` (``/opt/rocm-*`` and ``/opt/rocm``), else the
    ``rocm-core`` package's."""
    return host.memo(("amdgpu-rocm",), lambda: _rocm_installs(host))


def _rocm_installs(host: Host) -> list[RocmInstall]:
    default: str | None = None
    try:
        if host.lstat_exists("/opt/rocm"):
            default = host.resolve("/opt/rocm")
    except HostError:
        default = None
    out: list[RocmInstall] = []
    seen: set[str] = set()
    for cand in [*host.glob("/opt/rocm-*"), "/opt/rocm"]:
        try:
            real = host.resolve(cand)
        except HostError:
            continue
        if real in seen or not host.is_dir(real):
            continue
        seen.add(real)
        path = f"{real}/.info/version"
        try:
            text = host.read_text(path, cap=4096).strip().splitlines()
        except NotFound:
            continue  # not a ROCm tree (or one without its version file)
        except HostError as exc:
            out.append(RocmInstall(real, None, Evidence.file(path, None, str(exc)),
                                   real == default, str(exc)))
            continue
        v = text[0].strip() if text else ""
        if tb.line(v) is None:
            out.append(RocmInstall(real, None, Evidence.file(path, 1, v[:60]), real == default,
                                   f"{path}: not a version: {v[:60]!r}"))
            continue
        out.append(RocmInstall(real, v, Evidence.file(path, 1, v), real == default))
    if out:
        return out
    pkg = amd_packages(host).get("rocm-core")
    if pkg and tb.line(upstream_version(pkg[0])):
        v = upstream_version(pkg[0])
        v = ".".join(v.split(".")[:3])
        return [RocmInstall("package rocm-core", v,
                            Evidence.file(pkg[1], None, f"rocm-core {pkg[0]}"), True)]
    return []


# ------------------------------------------------------------------ frameworks
def rocm_frameworks(host: Host, envs: tuple[str, ...] = (), venv_roots: tuple[str, ...] = (),
                    homes: bool = True) -> list[RocmFramework]:
    """PyTorch ROCm builds in every Python site directory (the same search as the NVIDIA
    rules: system, conda, venvs; see :func:`aiaudit.linux.gpu.stack.site_dirs`)."""
    from aiaudit.linux.gpu.stack import frameworks

    out: list[RocmFramework] = []
    for f in frameworks(host, envs, venv_roots, homes):
        if f.kind != "rocm":
            continue
        m = re.search(r"\+rocm(\d+\.\d+(?:\.\d+)?)", f.version)
        rocm = f.hip or (m.group(1) if m else None)
        out.append(RocmFramework(f.name, f.version, rocm, f.site, f.evidence))
    return out
