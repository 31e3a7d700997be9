"""``gpu.driver_match``: the NVIDIA kernel module and the user-space driver libraries have
the same version.

Gathers the kernel side (``/proc/driver/nvidia/version`` or ``/sys/module/nvidia/version``
live, else the ``.modinfo`` version of ``nvidia.ko*`` of the newest kernel under
``/lib/modules``, else the driver package) and the user side (``libcuda.so.<version>`` and
``libnvidia-ml.so.<version>`` that the ``.so.1`` links in the loader's directories select,
else the package database): see :mod:`aiaudit.linux.gpu.stack`.  Decides: a GPU on the PCI
bus without a loaded module, a library without a module or a module without libraries
fails; otherwise each library passes when its version equals the module's
(``kernel-open/nvidia/nv-procfs.c``; NVML refuses a mismatch with "Driver/library version
mismatch").  Nothing from the scanned root is run or imported.
"""

from __future__ import annotations

from typing import Iterator

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
from aiaudit.core.host import Host
from aiaudit.linux.gpu import cuda, driver, nvidia
from aiaudit.linux.gpu import stack as gs

RELOAD = ("systemctl stop nvidia-persistenced; rmmod nvidia_uvm nvidia_drm nvidia_modeset "
          "nvidia && modprobe nvidia")


def _not_loaded(pci: tuple[str, ...]) -> Result:
    """Live: NVIDIA GPUs on the bus, no module loaded."""
    rem = Remediation("Load the driver (`modprobe nvidia`); if that fails, reinstall the "
                      "driver for the running kernel and check `dmesg` for NVRM errors.",
                      (Snippet.command("modprobe nvidia", "load the NVIDIA driver"),))
    return Result(Status.FAIL, "nvidia kernel module",
                  f"NVIDIA GPU(s) at {', '.join(pci)} but the nvidia kernel module is not "
                  "loaded (no /proc/driver/nvidia/version)", expected="loaded",
                  actual="not loaded", aspect=Aspect.RUNTIME, remediation=rem,
                  evidence=tuple(Evidence.runtime(f"/sys/bus/pci/devices/{d}") for d in pci))


def _no_module(host: Host, ks: gs.KernelSide, us: gs.UserSide) -> Result:
    """No kernel module version: an error where a module file could not be read, else a
    failure naming the user-space driver found and where no module was."""
    if ks.problems:
        return Result(Status.ERROR, "nvidia kernel module",
                      "kernel module version cannot be read: " + "; ".join(ks.problems),
                      evidence=ks.unreadable)
    user = driver.driver_version(host)
    what = ", ".join(f"{lib.path} ({lib.version})" for lib in us.effective.values())
    # the user-space files (or package record) found, and where no module was
    found = [Evidence.file(lib.path, None, lib.version) for lib in us.effective.values()]
    if not what and user:
        what = f"{user.what} {user.version}"
        found.append(user.evidence)
    notes = " ".join(ks.notes)
    return Result(Status.FAIL, "nvidia kernel module",
                  f"user-space driver {what} is installed but no nvidia kernel module was "
                  f"found for any kernel. {notes}".strip(),
                  expected="a kernel module of the same version", actual="none",
                  evidence=(*found, gs.module_search_evidence(ks)),
                  remediation=driver.install_driver(
                      host, nvidia.branch(user.version) if user else driver.DEFAULT_BRANCH,
                      "Install the kernel module of the same driver version"))


def _no_libraries(host: Host, kernel: gs.Version, us: gs.UserSide) -> Result:
    """A kernel module but no user-space driver library in the loader path."""
    return Result(Status.FAIL, "libcuda.so",
                  f"{kernel.what} is {kernel.version} but no libcuda.so.<version> or "
                  f"libnvidia-ml.so.<version> is in the loader path "
                  f"({', '.join(us.dirs) or 'no directories'}): no CUDA program can start",
                  expected=kernel.version, actual="absent", evidence=(kernel.evidence,),
                  remediation=driver.install_driver(
                      host, nvidia.branch(kernel.version),
                      f"Install the user-space driver libraries of version {kernel.version}"))


def _libraries(us: gs.UserSide) -> list[tuple[str, str, Evidence]] | None:
    """(name, version, evidence) of each user-space driver library the loader picks, else
    of the driver package; ``None`` when there is neither."""
    if us.effective:
        return [(lib.stem, lib.version,
                 Evidence.file(lib.via or lib.path, None, lib.path.rsplit("/", 1)[-1]))
                for lib in us.effective.values()]
    if us.package:
        return [(us.package.what, us.package.version, us.package.evidence)]
    return None


def _stray_note(ks: gs.KernelSide, us: gs.UserSide) -> str:
    """The kernel side's notes and the library versions the loader does not select."""
    notes = " ".join(ks.notes)
    stray = f" Note: {notes}" if notes else ""
    if us.others:
        stray += (" Other versions also present (not selected by the loader): "
                  + ", ".join(f"{o.path}" for o in us.others) + ".")
    return stray


def _mismatch(host: Host, ks: gs.KernelSide, kernel: gs.Version, stem: str, version: str
              ) -> tuple[str, Remediation]:
    """(message, remediation) of library ``stem`` at ``version`` against the module."""
    if ks.loaded:
        msg = (f"{stem} is {version} but the loaded kernel module is {kernel.version}: "
               "'Failed to initialize NVML: Driver/library version mismatch' and no CUDA "
               "program can start; the driver was probably updated without a reboot")
        return msg, Remediation(
            "Reboot so the kernel loads the module that matches the libraries (or stop "
            "every GPU process and reload the modules).  If it persists after a reboot, "
            "reinstall the driver so module and libraries come from one version.",
            (Snippet.command(RELOAD, "reload the kernel modules without rebooting"),))
    msg = (f"{stem} is {version} but the {kernel.what} is {kernel.version}: after boot NVML "
           "and CUDA fail with 'Driver/library version mismatch'")
    return msg, driver.install_driver(
        host, nvidia.branch(version), f"Rebuild or reinstall the kernel module of version "
        f"{version} (DKMS: `dkms autoinstall -k {ks.kernel or '<kernel>'}`)")


def _compare(host: Host, ks: gs.KernelSide, kernel: gs.Version,
             lib: tuple[str, str, Evidence], stray: str) -> Result:
    """One library against the kernel module."""
    stem, version, ev = lib
    aspect = Aspect.RUNTIME if ks.loaded else Aspect.PERSISTED
    data = {"kernel_module": kernel.version, "library": version}
    if cuda.vtuple(version) == cuda.vtuple(kernel.version):
        return Result(Status.PASS, stem, f"{stem} {version} matches the {kernel.what} "
                      f"{kernel.version}.{stray}", expected=kernel.version, actual=version,
                      aspect=aspect, evidence=(kernel.evidence, ev), data=data)
    msg, rem = _mismatch(host, ks, kernel, stem, version)
    return Result(Status.FAIL, stem, msg + "." + stray, expected=kernel.version,
                  actual=version, aspect=aspect, evidence=(kernel.evidence, ev),
                  remediation=rem, data=data)


def run(ctx: CheckContext) -> Iterator[Result]:
    """Kernel module and user-space driver libraries have the same version."""
    host = ctx.host
    blocked = driver.gate(host, ctx.params, "nvidia driver")
    if blocked:
        yield blocked
        return
    ks, us, g = gs.kernel_side(host), gs.user_side(host), gs.gpus(host)
    if host.live and ks.loaded is None and g.pci:
        yield _not_loaded(g.pci)
        return
    kernel = ks.effective
    if kernel is None:
        yield _no_module(host, ks, us)
        return
    libs = _libraries(us)
    if libs is None:
        yield _no_libraries(host, kernel, us)
        return
    stray = _stray_note(ks, us)
    for lib in libs:
        yield _compare(host, ks, kernel, lib, stray)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.driver_match``."""
    return [CheckSpec(
        id="gpu.driver_match", title="NVIDIA kernel module and user-space libraries agree",
        run=run, params_schema=driver.schema({}),
        description=(
            "Kernel module: /proc/driver/nvidia/version or /sys/module/nvidia/version "
            "(live), else the .modinfo version of nvidia.ko* of the newest kernel under "
            "/lib/modules, else the driver package (dpkg). Libraries: libcuda.so.<ver> and "
            "libnvidia-ml.so.<ver> selected through the .so.1 links in the loader's "
            "directories (/etc/ld.so.conf with includes, then the trusted dirs)."))]
