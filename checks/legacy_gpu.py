"""``gpu.*``: the NVIDIA driver, CUDA toolkits and framework builds work together.

Nothing from the scanned root is imported or executed: versions come from
``/proc/driver/nvidia/version`` (live), the ``.modinfo`` section of ``nvidia.ko*``, the
``libcuda.so.<version>`` names in the loader's directories, ``version.json``/``version.txt``
of each toolkit, ``torch/version.py`` (parsed with ``ast``) and ``*.dist-info`` names.  See
:mod:`aiaudit.linux.gpu.stack` for the discovery and ``checks/data/cuda_drivers.json`` for
NVIDIA's minimum-driver tables (source and date inside).
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import CommandError, HostError, LiveStateUnavailable, ParseError
from aiaudit.core.host import Host
from aiaudit.core.identity import os_release
from aiaudit.core.parsing import lazy_pattern
from aiaudit.linux import ldconf
from aiaudit.linux.gpu import cuda, nvidia
from aiaudit.linux.gpu import stack as gs
from aiaudit.linux.packages.installed import DPKG_STATUS

PERSISTENCED = "nvidia-persistenced.service"

FORWARD_COMPAT_CAVEAT = (
    "forward compatibility works only on NVIDIA Data Center GPUs, select NGC Server Ready "
    "RTX GPUs and Jetson (CUDA Compatibility guide, 'Forward Compatibility')"
)

_DATACENTER = lazy_pattern(
    r"\b(Tesla|DGX|HGX|[ABH]\d{2,3}[A-Z]?|GH200|GB\d00|B\d00|L4|L40S?|L20|T4|V100|P100|P40|"
    r"K80|A2|RTX PRO \d+ Blackwell Server)\b")
"""GPU models (``/proc/driver/nvidia/gpus/*/information`` ``Model:``) that are Data Center
products: A100/A30/A10/H100/H200/B200/L4/L40S/T4/V100... (a heuristic on the name)."""

_REQUIRE_GPU = {"type": "boolean", "default": False,
                "description": "fail instead of skip when there is no NVIDIA GPU and driver"}
_ENVS = {
    "python_envs": {"type": "array", "items": {"type": "string", "pattern": "^/"},
                    "default": [],
                    "description": "Python env prefixes or site-packages dirs to inspect "
                                   "(besides system, conda and venv locations)"},
    "venv_roots": {"type": "array", "items": {"type": "string", "pattern": "^/"},
                   "default": ["/opt/venvs", "/opt/venv"],
                   "description": "directories holding venvs (<root>/<name>/lib/python3*)"},
    "search_homes": {"type": "boolean", "default": True,
                     "description": "look for ~/miniconda3, ~/anaconda3, ~/miniforge3 of "
                                    "(at most 64) users under /home; turn off where /home "
                                    "is an automounter"},
}


# ------------------------------------------------------------------ shared helpers
def _distro(host: Host) -> str:
    osr = os_release(host)
    ids = {osr.get("ID", "")} | set(osr.get("ID_LIKE", "").split())
    if "ubuntu" in ids:
        return "ubuntu"
    if "debian" in ids:
        return "debian"
    if ids & {"rhel", "fedora", "centos", "rocky", "almalinux", "ol"}:
        return "rhel"
    if ids & {"suse", "sles", "opensuse", "opensuse-leap"}:
        return "suse"
    return "other"


def install_driver(host: Host, branch: int, why: str) -> Remediation:
    """How to install driver branch ``branch`` (or newer) on the scanned distro."""
    d = _distro(host)
    if d == "ubuntu":
        cmd = f"apt-get install nvidia-driver-{branch}-server"
        how = (f"install driver branch {branch} or newer: Ubuntu's nvidia-driver-{branch}-server "
               f"(or cuda-drivers-{branch} from NVIDIA's CUDA repository)")
    elif d == "debian":
        cmd = f"apt-get install cuda-drivers-{branch}"
        how = (f"install driver branch {branch} or newer: cuda-drivers-{branch} from NVIDIA's "
               "CUDA repository (Debian's own nvidia-driver package carries one branch per "
               "release)")
    elif d == "rhel":
        cmd = (f"dnf module reset -y nvidia-driver && "
               f"dnf module install -y nvidia-driver:{branch}-dkms")
        how = (f"install driver branch {branch} or newer: the nvidia-driver:{branch}-dkms "
               "module stream of NVIDIA's CUDA repository (:{branch}-open for open modules)")
    elif d == "suse":
        cmd = f"zypper install cuda-drivers-{branch}"
        how = f"install driver branch {branch} or newer: cuda-drivers-{branch} (NVIDIA repository)"
    else:
        cmd = ""
        how = (f"install an NVIDIA driver of branch {branch} or newer (package "
               f"cuda-drivers-{branch} in NVIDIA's CUDA repository)")
    snippets = (Snippet.command(cmd, f"install driver branch {branch}"),) if cmd else ()
    return Remediation(f"{why}: {how}, then reboot.", snippets)


def _absent_reason(host: Host) -> str:
    if host.live:
        return ("no NVIDIA GPU on the PCI bus and no NVIDIA driver (nvidia module not loaded, "
                "no libcuda.so in the loader path)")
    return ("no NVIDIA driver in this root (no nvidia.ko under /lib/modules, no libcuda.so in "
            "the loader path, no driver package); a container image gets it from its host")


def _absent_evidence(host: Host, ks: gs.KernelSide, us: gs.UserSide
                     ) -> tuple[Evidence, ...]:
    """Where no NVIDIA driver was found: the module directories, the loader path, the
    package databases (file evidence where they exist) and, live, the PCI bus."""
    libs = " or ".join(f"{lib}.<version>" for lib in gs.LIBS)
    dirs = ", ".join(d.lstrip("/") for d in us.dirs) or (
        "no directory exists of etc/ld.so.conf's and "
        + ", ".join(d.lstrip("/") for d in ldconf.DEFAULT_DIRS))
    out = [gs.module_search_evidence(ks),
           Evidence.default(f"{libs} in the loader path: {dirs}", "none found")]
    dbs = [db for db in (DPKG_STATUS, gs.RPMDB_SQLITE) if host.is_file(db)]
    out += [Evidence.file(db, None, "no NVIDIA driver package") for db in dbs]
    if not dbs:
        out.append(Evidence.default("package databases: " + ", ".join(
            db.lstrip("/") for db in (DPKG_STATUS, gs.RPMDB_SQLITE)), "no such file"))
    if host.live:
        out.append(Evidence.runtime("/sys/bus/pci/devices", "no NVIDIA device"))
    return tuple(out)


def gate(host: Host, params: Any, subject: str = "gpu") -> Result | None:
    """A SKIP (or, with ``require_gpu``, a FAIL) when there is neither an NVIDIA GPU nor an
    NVIDIA driver; ``None`` when the GPU rules apply."""
    ks, us, g = gs.kernel_side(host), gs.user_side(host), gs.gpus(host)
    if ks.effective or us.effective or us.package or g.driver or g.pci or ks.problems:
        return None
    why = _absent_reason(host)
    if params.get("require_gpu"):
        return Result(Status.FAIL, subject, f"{why}, but this ruleset requires GPUs",
                      expected="an NVIDIA GPU with its driver", actual="none",
                      evidence=_absent_evidence(host, ks, us),
                      remediation=install_driver(host, 535, "This host must have GPUs"))
    return Result(Status.SKIP, subject, f"{why}: GPU rules do not apply")


def driver_version(host: Host) -> gs.Version | None:
    """The driver version that CUDA will meet: the kernel module (loaded, else installed),
    else the user-space libcuda, else the package database."""
    ks, us = gs.kernel_side(host), gs.user_side(host)
    if ks.effective:
        return ks.effective
    lib = us.effective.get("libcuda.so") or us.effective.get("libnvidia-ml.so")
    if lib:
        return gs.Version(lib.version, Evidence.file(lib.path, None, lib.version),
                          "user-space library")
    return us.package


def _vt(v: str) -> tuple[int, ...]:
    return cuda.vtuple(v)


# ------------------------------------------------------------------ driver/library match
def run_match(ctx: CheckContext) -> Iterator[Result]:
    """Kernel module and user-space driver libraries have the same version."""
    host, p = ctx.host, ctx.params
    blocked = gate(host, p, "nvidia driver")
    if blocked:
        yield blocked
        return
    ks, us, g = gs.kernel_side(host), gs.user_side(host), gs.gpus(host)
    kernel = ks.effective
    notes = " ".join(ks.notes)
    if host.live and ks.loaded is None and g.pci:
        rem = Remediation("Load the driver (`modprobe nvidia`); if that fails, reinstall the "
                          "driver for the running kernel and check `dmesg` for NVRM errors.",
                          (Snippet.command("modprobe nvidia", "load the NVIDIA driver"),))
        yield Result(Status.FAIL, "nvidia kernel module",
                     f"NVIDIA GPU(s) at {', '.join(g.pci)} but the nvidia kernel module is not "
                     "loaded (no /proc/driver/nvidia/version)", expected="loaded",
                     actual="not loaded", aspect=Aspect.RUNTIME, remediation=rem,
                     evidence=tuple(Evidence.runtime(f"/sys/bus/pci/devices/{d}")
                                    for d in g.pci))
        return
    if kernel is None:
        if ks.problems:
            yield Result(Status.ERROR, "nvidia kernel module",
                         "kernel module version cannot be read: " + "; ".join(ks.problems),
                         evidence=ks.unreadable)
            return
        user = driver_version(host)
        what = ", ".join(f"{lib.path} ({lib.version})" for lib in us.effective.values())
        # the user-space files (or package record) found, and where no module was
        found = [Evidence.file(lib.path, None, lib.version) for lib in us.effective.values()]
        if not what and user:
            what = f"{user.what} {user.version}"
            found.append(user.evidence)
        yield Result(Status.FAIL, "nvidia kernel module",
                     f"user-space driver {what} is installed but no nvidia kernel module was "
                     f"found for any kernel. {notes}".strip(),
                     expected="a kernel module of the same version", actual="none",
                     evidence=(*found, gs.module_search_evidence(ks)),
                     remediation=install_driver(
                         host, nvidia.branch(user.version) if user else 535,
                         "Install the kernel module of the same driver version"))
        return
    if not us.effective:
        if us.package:
            libs_found = [(us.package.what, us.package.version, us.package.evidence)]
        else:
            yield Result(Status.FAIL, "libcuda.so",
                         f"{kernel.what} is {kernel.version} but no libcuda.so.<version> or "
                         f"libnvidia-ml.so.<version> is in the loader path "
                         f"({', '.join(us.dirs) or 'no directories'}): no CUDA program can "
                         "start", expected=kernel.version, actual="absent",
                         evidence=(kernel.evidence,),
                         remediation=install_driver(host, nvidia.branch(kernel.version),
                                                    "Install the user-space driver libraries "
                                                    f"of version {kernel.version}"))
            return
    else:
        libs_found = [(lib.stem, lib.version, Evidence.file(lib.via or lib.path, None,
                                                            lib.path.rsplit("/", 1)[-1]))
                      for lib in us.effective.values()]
    aspect = Aspect.RUNTIME if ks.loaded else Aspect.PERSISTED
    stray = f" Note: {notes}" if notes else ""
    if us.others:
        stray += (" Other versions also present (not selected by the loader): "
                 + ", ".join(f"{o.path}" for o in us.others) + ".")
    for stem, version, ev in libs_found:
        data = {"kernel_module": kernel.version, "library": version}
        if _vt(version) == _vt(kernel.version):
            yield Result(Status.PASS, stem, f"{stem} {version} matches the {kernel.what} "
                         f"{kernel.version}.{stray}", expected=kernel.version, actual=version,
                         aspect=aspect, evidence=(kernel.evidence, ev), data=data)
            continue
        if ks.loaded:
            msg = (f"{stem} is {version} but the loaded kernel module is {kernel.version}: "
                   "'Failed to initialize NVML: Driver/library version mismatch' and no CUDA "
                   "program can start; the driver was probably updated without a reboot")
            rem = Remediation(
                "Reboot so the kernel loads the module that matches the libraries (or stop "
                "every GPU process and reload the modules).  If it persists after a reboot, "
                "reinstall the driver so module and libraries come from one version.",
                (Snippet.command("systemctl stop nvidia-persistenced; rmmod nvidia_uvm "
                                 "nvidia_drm nvidia_modeset nvidia && modprobe nvidia",
                                 "reload the kernel modules without rebooting"),))
        else:
            msg = (f"{stem} is {version} but the {kernel.what} is {kernel.version}: after "
                   "boot NVML and CUDA fail with 'Driver/library version mismatch'")
            rem = install_driver(host, nvidia.branch(version),
                                 f"Rebuild or reinstall the kernel module of version {version}"
                                 f" (DKMS: `dkms autoinstall -k {ks.kernel or '<kernel>'}`)")
        yield Result(Status.FAIL, stem, msg + "." + stray, expected=kernel.version,
                     actual=version, aspect=aspect, evidence=(kernel.evidence, ev),
                     remediation=rem, data=data)


# ------------------------------------------------------------------ driver vs CUDA
def _forward_compat(host: Host, p: Any, lib: gs.Lib, drv: str) -> tuple[Status, str]:
    """(status, text) for relying on a forward-compatibility libcuda newer than ``drv``;
    the text completes "CUDA programs ...": "run on driver X through ..."."""
    where = f"forward-compatibility libcuda {lib.version} ({lib.path})"
    if p.get("forward_compat") == "never":
        return Status.FAIL, (f"would need {where}, which this ruleset does not accept "
                             "(forward_compat: never)")
    models = gs.gpus(host).models
    bad = sorted({m for m in models.values() if not _DATACENTER().search(m)})
    if bad:
        return Status.FAIL, (f"would need {where}, but {', '.join(bad)} is not a Data Center "
                             "GPU, so they fail with CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE; "
                             + FORWARD_COMPAT_CAVEAT)
    seen = (f"GPU models: {', '.join(sorted(set(models.values())))}" if models
            else "the GPU model is not known here, so this holds only on a supported GPU")
    return Status.PASS, f"run on driver {drv} through {where}; {FORWARD_COMPAT_CAVEAT}; {seen}"


def run_cuda(ctx: CheckContext) -> Iterator[Result]:
    """The driver is new enough for each CUDA toolkit and framework build."""
    host, p = ctx.host, ctx.params
    full = p["table"] == "release"
    blocked = gate(host, p, "cuda")
    if blocked:
        yield blocked
        return
    table = gs.driver_table()
    drv = driver_version(host)
    tks = gs.toolkits(host) if "toolkits" in p["targets"] else []
    fws = (gs.frameworks(host, p["python_envs"], p["venv_roots"], p["search_homes"])
           if "frameworks" in p["targets"] else [])
    if not tks and not fws:
        yield Result(Status.SKIP, "cuda", "no CUDA toolkit (/usr/local/cuda-*) and no PyTorch "
                     "or JAX build in the Python environments found: nothing needs a driver")
        return
    us = gs.user_side(host)
    loader_compat = next(iter(us.compat_in_path), None)
    tname = "release driver table" if full else "minor-version compatibility table"

    def decide(subject: str, cv: cuda.CudaVersion, evidence: tuple[Evidence, ...],
               compat: gs.Lib | None, what: str) -> Result:
        req = table.required(cv, full)
        if req is None:
            return Result(Status.ERROR, subject,
                          f"CUDA {cv.text} is not in the {tname} (read {table.read}, newest "
                          f"{cuda.vstr(table.newest())}); extend checks/data/cuda_drivers.json",
                          evidence=evidence)
        minimum, basis = req
        data = {"cuda": cv.text, "required": minimum, "basis": basis, "table_read": table.read}
        if drv is None:
            return Result(Status.FAIL, subject, f"{what} needs driver >= {minimum} ({basis}) "
                          "but no NVIDIA driver is installed", expected=f">= {minimum}",
                          actual="none", evidence=evidence, data=data,
                          remediation=install_driver(host, _vt(minimum)[0],
                                                     f"{what} needs driver >= {minimum}"))
        ev = (drv.evidence, *evidence)
        data["driver"] = drv.version
        if cuda.driver_ge(drv.version, minimum):
            return Result(Status.PASS, subject, f"{what} needs driver >= {minimum} ({basis}); "
                          f"the {drv.what} is {drv.version}", expected=f">= {minimum}",
                          actual=drv.version, evidence=ev, data=data)
        if compat and cuda.driver_ge(compat.version, minimum) and \
                _vt(compat.version) > _vt(drv.version):
            status, note = _forward_compat(host, p, compat, drv.version)
            data["forward_compat"] = compat.version
            rem = None
            if status is Status.FAIL:
                rem = install_driver(host, _vt(minimum)[0], f"{what} needs driver >= {minimum}")
            return Result(status, subject, f"{what} needs driver >= {minimum} ({basis}); the "
                          f"{drv.what} is {drv.version}; its CUDA programs {note}",
                          expected=f">= {minimum}",
                          actual=drv.version, evidence=(*ev, Evidence.file(compat.path)),
                          data=data, remediation=rem)
        return Result(Status.FAIL, subject,
                      f"{what} needs driver >= {minimum} ({basis}) but the {drv.what} is "
                      f"{drv.version}: CUDA calls fail with 'CUDA driver version is "
                      "insufficient for CUDA runtime version'", expected=f">= {minimum}",
                      actual=drv.version, evidence=ev, data=data,
                      remediation=install_driver(host, _vt(minimum)[0],
                                                 f"{what} needs driver >= {minimum}"))

    for t in tks:
        if t.problem or t.version is None:
            yield Result(Status.ERROR, t.name, f"toolkit version unknown: {t.problem}")
            continue
        label = f"CUDA toolkit {t.version.text}" + (" (the /usr/local/cuda default)"
                                                    if t.default else "")
        yield decide(t.name, t.version, (t.evidence,) if t.evidence else (),
                     t.compat or loader_compat, label)
    for f in fws:
        if f.problem:
            yield Result(Status.ERROR, f.subject, f"cannot tell how {f.name} was built: "
                         f"{f.problem}", evidence=(f.evidence,))
            continue
        if f.kind == "cpu":
            yield Result(Status.SKIP, f.subject, f"{f.name} {f.version} is a CPU-only build "
                         "(torch.version.cuda is None): it needs no NVIDIA driver",
                         evidence=(f.evidence,))
            continue
        if f.kind == "rocm":
            yield Result(Status.SKIP, f.subject, f"{f.name} {f.version} is a ROCm build (HIP "
                         f"{f.hip}): it uses AMD's ROCm stack, not the NVIDIA driver",
                         evidence=(f.evidence,))
            continue
        cv = f.cuda
        if cv is None and f.cuda_major is not None:
            if full:
                yield Result(Status.SKIP, f.subject, f"{f.name} {f.version} is built for CUDA "
                             f"{f.cuda_major} but its CUDA minor version is unknown (no "
                             "nvidia-cuda-runtime wheel): only minor-version compatibility "
                             "applies", evidence=(f.evidence,))
                continue
            cv = cuda.CudaVersion(f.cuda_major, 0, None, str(f.cuda_major))
            label = f"CUDA {f.cuda_major}.x"
        else:
            assert cv is not None
            label = f"CUDA {cv.text}"
        wheels = ""
        if f.wheels:
            wheels = " with " + ", ".join(f"{n} {v}" for n, v in sorted(f.wheels.items())[:3])
        yield decide(f.subject, cv, (f.evidence,), loader_compat,
                     f"{f.name} {f.version} ({label}{wheels})")


# ------------------------------------------------------------------ forward compatibility
def run_forward_compat(ctx: CheckContext) -> Iterator[Result]:
    """What each cuda-compat package changes, and whether it only does harm."""
    host, p = ctx.host, ctx.params
    blocked = gate(host, p, "cuda-compat")
    if blocked:
        yield blocked
        return
    us = gs.user_side(host)
    found: list[tuple[str, gs.Lib, bool]] = []
    for t in gs.toolkits(host):
        if t.compat:
            in_path = any(c.path == t.compat.path for c in us.compat_in_path)
            found.append((t.name, t.compat, in_path))
    for c in us.compat_in_path:
        if not any(c.path == lib.path for _, lib, _ in found):
            found.append((c.path.rsplit("/", 1)[0], c, True))
    if not found:
        yield Result(Status.SKIP, "cuda-compat", "no forward-compatibility package "
                     "(no /usr/local/cuda-*/compat/libcuda.so.* and none in the loader path)")
        return
    drv = driver_version(host)
    for subject, lib, in_path in found:
        use = ("it is in the loader path, so every process loads it" if in_path else
               "only processes that put its directory on LD_LIBRARY_PATH load it")
        ev = (Evidence.file(lib.path, None, lib.version),)
        if drv is None:
            yield Result(Status.SKIP, subject, f"forward-compatibility libcuda {lib.version}; "
                         "no NVIDIA driver to compare with", evidence=ev)
            continue
        ev = (drv.evidence, *ev)
        data = {"compat": lib.version, "driver": drv.version, "in_loader_path": in_path}
        if _vt(lib.version) < _vt(drv.version):
            pkg = _compat_package(subject)
            yield Result(Status.FAIL, subject,
                         f"forward-compatibility libcuda {lib.version} is older than the "
                         f"{drv.what} {drv.version}; {use}, and it then fails with "
                         "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: it only does harm",
                         expected=f"> {drv.version}", actual=lib.version, evidence=ev,
                         data=data, remediation=Remediation(
                             f"Remove the stale forward-compatibility package{pkg[0]} (and any "
                             "ld.so.conf.d or LD_LIBRARY_PATH entry pointing at it).",
                             pkg[1]))
            continue
        if _vt(lib.version) == _vt(drv.version):
            yield Result(Status.PASS, subject, f"forward-compatibility libcuda {lib.version} "
                         f"is the same version as the {drv.what}: it changes nothing",
                         expected=f">= {drv.version}", actual=lib.version, evidence=ev,
                         data=data)
            continue
        status, note = _forward_compat(host, p, lib, drv.version)
        yield Result(status, subject, f"CUDA programs that load it ({use}) {note}",
                     expected=f"> {drv.version}", actual=lib.version, evidence=ev, data=data,
                     remediation=None if status is Status.PASS else Remediation(
                         "Upgrade the driver instead of relying on forward compatibility on "
                         "this GPU, or remove the cuda-compat package."))


def _compat_package(subject: str) -> tuple[str, tuple[Snippet, ...]]:
    m = re.search(r"cuda-(\d+)\.(\d+)", subject)
    if not m:
        return "", ()
    pkg = f"cuda-compat-{m.group(1)}-{m.group(2)}"
    return f" {pkg}", (Snippet.command(f"apt-get remove {pkg}  # or: dnf remove {pkg}",
                                       f"remove {pkg}"),)


# ------------------------------------------------------------------ persistence mode
def _persistenced(host: Host) -> tuple[bool | None, str, tuple[Evidence, ...]]:
    """(configured at boot?, why, evidence) for nvidia-persistenced."""
    from aiaudit.linux.systemd.units import is_enabled, load_unit, unit_evidence

    try:
        unit = load_unit(host, PERSISTENCED)
    except (HostError, ParseError) as exc:
        return None, f"{PERSISTENCED} cannot be read: {exc}", (
            Evidence.default(f"unit {PERSISTENCED}", f"cannot be read: {exc}"),)
    if not unit.exists:
        # the mask, or (a default) where the unit file was looked for
        return False, (f"{PERSISTENCED} is masked" if unit.masked else
                       f"{PERSISTENCED} is not installed"), (unit_evidence(host, PERSISTENCED),)
    en = is_enabled(host, PERSISTENCED)
    ev = [Evidence.file(en.evidence)] if en.evidence else []
    for a in unit.get_all("Service", "ExecStart"):
        if "--no-persistence-mode" in a.value:
            return False, (f"{PERSISTENCED} runs with --no-persistence-mode "
                           f"({a.file}:{a.line})"), (*ev, Evidence.file(a.file, a.line, a.value))
    if not en.enabled:
        return False, f"{PERSISTENCED}: {en.reason}", (*ev, Evidence.file(unit.path or ""))
    return True, f"{PERSISTENCED} is enabled ({en.reason})", tuple(ev)


def _persistence_fix(host: Host, installed: bool) -> Remediation:
    if installed:
        return Remediation("Enable nvidia-persistenced (it turns persistence mode on for all "
                           "GPUs by default).", (
                               Snippet.enable("nvidia-persistenced.service",
                                              "start it at every boot"),
                               Snippet.command("systemctl start nvidia-persistenced",
                                               "start it now")))
    # not installed: the unit only exists once the package is in, so enabling is part of
    # the same command sequence (a unit that does not exist cannot be enabled offline)
    snippets = [Snippet.command("systemctl enable --now nvidia-persistenced",
                                "start the daemon now and at every boot")]
    d = _distro(host)
    drv = driver_version(host)
    branch = str(nvidia.branch(drv.version)) if drv else "<branch>"
    pkg = {"ubuntu": f"nvidia-compute-utils-{branch}-server", "debian": "nvidia-persistenced",
           "rhel": "nvidia-persistenced", "suse": "nvidia-persistenced"}.get(
               d, "nvidia-persistenced")
    tool = {"rhel": "dnf install", "suse": "zypper install"}.get(d, "apt-get install")
    snippets.insert(0, Snippet.command(f"{tool} {pkg}", f"install {pkg}"))
    return Remediation(f"Install {pkg} and enable nvidia-persistenced.", tuple(snippets))


def run_persistence(ctx: CheckContext) -> Iterator[Result]:
    """Persistence mode on: live from nvidia-smi, at boot from nvidia-persistenced."""
    host, p = ctx.host, ctx.params
    blocked = gate(host, p, "persistence mode")
    if blocked:
        yield blocked
        return
    boot, why, bev = _persistenced(host)
    installed = "not installed" not in why
    if not host.allow_commands:
        note = "" if not host.live else " (nvidia-smi is run only when scanning the real / live)"
        if boot is None:
            yield Result(Status.ERROR, "nvidia-persistenced", why + note, evidence=bev)
        elif boot:
            yield Result(Status.PASS, "nvidia-persistenced", why + note, expected="enabled",
                         actual="enabled", aspect=Aspect.PERSISTED, evidence=bev)
        else:
            yield Result(Status.FAIL, "nvidia-persistenced", f"{why}: persistence mode will be "
                         f"off after boot{note}", expected="enabled", actual="disabled",
                         aspect=Aspect.PERSISTED, evidence=bev,
                         remediation=_persistence_fix(host, installed))
        return
    argv = ["nvidia-smi", "--query-gpu=index,pci.bus_id,persistence_mode",
            "--format=csv,noheader"]
    shown = " ".join(argv)
    try:
        res = host.run(argv, timeout=float(p["timeout"]))
    except (CommandError, LiveStateUnavailable) as exc:
        yield Result(Status.ERROR, "nvidia-smi", f"persistence mode cannot be read: {exc}",
                     evidence=(Evidence.command(shown),))
        return
    out = res.stdout.strip()
    if res.returncode != 0:
        first = (out or res.stderr.strip()).splitlines()[:1]
        yield Result(Status.ERROR, "nvidia-smi", f"nvidia-smi exited {res.returncode}: "
                     f"{first[0] if first else 'no output'}",
                     evidence=(Evidence.command(shown, out[:200]),))
        return
    try:
        rows = nvidia.parse_persistence_csv(out)
    except ParseError as exc:
        yield Result(Status.ERROR, "nvidia-smi", f"unexpected nvidia-smi output: {exc}",
                     evidence=(Evidence.command(shown, out[:200]),))
        return
    for row in rows:
        subject = f"GPU {row.index} ({row.bus_id})"
        ev = (Evidence.command(shown, f"{row.index}, {row.bus_id}, {row.mode}"), *bev)
        if row.mode not in ("Enabled", "Disabled"):
            yield Result(Status.SKIP, subject, f"persistence mode is {row.mode} on this GPU "
                         "(not supported on this platform)", evidence=ev)
        elif row.mode == "Disabled":
            yield Result(Status.FAIL, subject, f"persistence mode is off now; at boot: {why}",
                         expected="Enabled", actual="Disabled", aspect=Aspect.RUNTIME,
                         evidence=ev, remediation=_persistence_fix(host, installed))
        elif p["persist"] and boot is False:
            yield Result(Status.FAIL, subject, f"persistence mode is on now, but {why}: it "
                         "reverts at reboot (set with `nvidia-smi -pm 1`?)", expected="Enabled",
                         actual="Enabled", aspect=Aspect.DRIFT, evidence=ev,
                         remediation=_persistence_fix(host, installed))
        else:
            yield Result(Status.PASS, subject, f"persistence mode is on; at boot: {why}",
                         expected="Enabled", actual="Enabled", aspect=Aspect.RUNTIME,
                         evidence=ev)


# ------------------------------------------------------------------ GPU count
def run_count(ctx: CheckContext) -> Iterator[Result]:
    """The driver sees the GPUs the node should have (live)."""
    host, p = ctx.host, ctx.params
    blocked = gate(host, p, "gpus")
    if blocked:
        yield blocked
        return
    if not host.live:
        yield Result(Status.SKIP, "gpus", "the GPU count is live state; an offline scan "
                     "cannot see GPUs")
        return
    g = gs.gpus(host)
    seen = list(g.driver or [])
    pci = list(g.pci or [])
    want = p["min_count"]
    ev = tuple(Evidence.runtime(f"/proc/driver/nvidia/gpus/{b}", g.models.get(b))
               for b in seen) or (Evidence.runtime("/proc/driver/nvidia/gpus"),)
    data = {"driver": seen, "pci": pci, "models": dict(g.models)}
    missing = sorted(set(pci) - {b.lower() for b in seen})
    if len(seen) < want or missing:
        lost = (f"; on the PCI bus but not seen by the driver: {', '.join(missing)}"
                if missing else "")
        yield Result(Status.FAIL, "gpus", f"the driver sees {len(seen)} GPU(s), the ruleset "
                     f"requires at least {want}{lost}", expected=f">= {want}",
                     actual=str(len(seen)), aspect=Aspect.RUNTIME, evidence=ev, data=data,
                     remediation=Remediation(
                         "Check `dmesg` for NVRM Xid errors ('fallen off the bus'), the "
                         "driver's ExcludedGpus setting and the hardware; reset or replace the "
                         "missing GPU."))
        return
    yield Result(Status.PASS, "gpus", f"the driver sees {len(seen)} GPU(s) (at least {want} "
                 "required)", expected=f">= {want}", actual=str(len(seen)),
                 aspect=Aspect.RUNTIME, evidence=ev, data=data)


def _schema(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False,
            "properties": {"require_gpu": _REQUIRE_GPU, **props}}


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the ``gpu.*`` checks."""
    fc = {"enum": ["datacenter", "never"], "default": "datacenter",
          "description": "accept a cuda-compat libcuda newer than the driver (only on Data "
                         "Center GPUs) or never"}
    return [
        CheckSpec(
            id="gpu.driver_match", title="NVIDIA kernel module and user-space libraries agree",
            run=run_match, params_schema=_schema({}),
            description=(
                "Kernel module: /proc/driver/nvidia/version or /sys/module/nvidia/version "
                "(live), else the .modinfo version of nvidia.ko* of the newest kernel under "
                "/lib/modules, else the driver package (dpkg). Libraries: libcuda.so.<ver> and "
                "libnvidia-ml.so.<ver> selected through the .so.1 links in the loader's "
                "directories (/etc/ld.so.conf with includes, then the trusted dirs).")),
        CheckSpec(
            id="gpu.cuda_driver", title="The NVIDIA driver is new enough for each CUDA user",
            run=run_cuda,
            params_schema=_schema({
                "table": {"enum": ["minor_compat", "release"], "default": "minor_compat",
                          "description": "minor_compat: CUDA release notes Table 2 (per CUDA "
                                         "major); release: Table 3 (driver of each release)"},
                "targets": {"type": "array", "items": {"enum": ["toolkits", "frameworks"]},
                            "default": ["toolkits", "frameworks"], "uniqueItems": True},
                "forward_compat": fc, **_ENVS}),
            description=(
                "Compares the driver (kernel module, else libcuda) with NVIDIA's minimum "
                "driver for each /usr/local/cuda-* toolkit (version.json/version.txt) and each "
                "PyTorch (torch/version.py, parsed) or JAX CUDA build in system, conda and venv "
                "site directories; table shipped in checks/data/cuda_drivers.json.")),
        CheckSpec(
            id="gpu.forward_compat", title="cuda-compat packages help rather than harm",
            run=run_forward_compat, params_schema=_schema({"forward_compat": fc}),
            description=(
                "For each /usr/local/cuda-*/compat/libcuda.so.<ver> and compat directory in the "
                "loader path: newer than the driver = forward compatibility (Data Center GPUs "
                "only); older = stale, breaks CUDA for whoever loads it.")),
        CheckSpec(
            id="gpu.persistence", title="GPU persistence mode is on and survives reboot",
            run=run_persistence,
            params_schema=_schema({
                "timeout": {"type": "number", "minimum": 1, "maximum": 60, "default": 10,
                            "description": "seconds nvidia-smi may take"},
                "persist": {"type": "boolean", "default": True,
                            "description": "also require nvidia-persistenced enabled at boot"}}),
            description=(
                "Live (real /): nvidia-smi --query-gpu=index,pci.bus_id,persistence_mode with "
                "a timeout (a hung or missing nvidia-smi is an error result). At boot: "
                "nvidia-persistenced.service enabled and not run with --no-persistence-mode.")),
        CheckSpec(
            id="gpu.count", title="The driver sees the required number of GPUs",
            run=run_count, modes=("live",),
            params_schema=_schema({"min_count": {"type": "integer", "minimum": 0,
                                                 "default": 1}}),
            description=(
                "Live: /proc/driver/nvidia/gpus/* against min_count and against NVIDIA "
                "display/3D controllers on the PCI bus (a GPU that fell off the bus).")),
    ]
