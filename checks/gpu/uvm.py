"""``gpu.uvm``: the nvidia-uvm kernel module is available (CUDA needs ``/dev/nvidia-uvm``).

Gathers, live, ``/sys/module/nvidia_uvm`` (exists while the module is loaded:
Documentation/ABI/testing/sysfs-module); offline, the directory of the ``nvidia.ko*`` found
for the newest kernel (:func:`aiaudit.linux.gpu.stack.kernel_side`).  Decides: live, the
module must be loaded (a container cannot load it, and ``nvidia-modprobe`` does so only
where it is installed setuid); offline, ``nvidia-uvm.ko*`` must sit beside ``nvidia.ko``
(the driver's DKMS package builds nvidia, nvidia-uvm, nvidia-modeset and nvidia-drm
together).
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
from aiaudit.linux.gpu import driver
from aiaudit.linux.gpu import stack as gs
from aiaudit.linux.kmod import config as kmod

FIX = Remediation("Load nvidia-uvm now and at every boot (CUDA needs /dev/nvidia-uvm; a "
                  "container cannot load it).", (
                      Snippet.file("/etc/modules-load.d/nvidia-uvm.conf", "nvidia-uvm\n",
                                   "load nvidia-uvm at boot"),
                      Snippet.command("modprobe nvidia-uvm", "load it now")))
KO_NAMES = tuple(f"nvidia.ko{s}" for s in ("", ".xz", ".gz", ".zst"))
"""The nvidia module file, uncompressed or compressed as kmod reads it."""


def _live(host: Host) -> Result:
    """Live: the module is loaded."""
    loaded = kmod.is_loaded(host, "nvidia_uvm")
    ev = (Evidence.runtime("/sys/module/nvidia_uvm", "loaded" if loaded else "absent"),)
    if loaded:
        return Result(Status.PASS, "nvidia-uvm", "the nvidia_uvm module is loaded",
                      expected="loaded", actual="loaded", aspect=Aspect.RUNTIME, evidence=ev)
    return Result(Status.FAIL, "nvidia-uvm", "the nvidia_uvm module is not loaded: CUDA "
                  "programs fail with 'no CUDA-capable device' until something loads "
                  "it (nvidia-modprobe does so only where it is installed setuid and "
                  "not inside containers)", expected="loaded", actual="not loaded",
                  aspect=Aspect.RUNTIME, evidence=ev, remediation=FIX)


def _offline(host: Host) -> Result:
    """Offline: nvidia-uvm.ko* is installed beside nvidia.ko."""
    inst = gs.kernel_side(host).installed
    if inst is None or not inst.evidence.path or not inst.evidence.path.endswith(KO_NAMES):
        return Result(Status.SKIP, "nvidia-uvm", "no nvidia.ko module file in this root to "
                      "look beside (driver known only from the package database)")
    d = inst.evidence.path.rsplit("/", 1)[0]
    found = [n for n in host.listdir(d) if n.startswith("nvidia-uvm.ko")]
    if found:
        return Result(Status.PASS, "nvidia-uvm", f"{d}/{found[0]} is installed beside "
                      "nvidia.ko", expected="installed", actual="installed",
                      aspect=Aspect.PERSISTED, evidence=(Evidence.file(f"{d}/{found[0]}"),))
    return Result(Status.FAIL, "nvidia-uvm", f"no nvidia-uvm.ko beside {inst.evidence.path}: "
                  "CUDA cannot create /dev/nvidia-uvm", expected="installed",
                  actual="absent", aspect=Aspect.PERSISTED,
                  evidence=(inst.evidence,), remediation=Remediation(
                      "Reinstall the driver's kernel modules (DKMS builds nvidia, "
                      "nvidia-uvm, nvidia-modeset and nvidia-drm together)."))


def run(ctx: CheckContext) -> Iterator[Result]:
    """nvidia-uvm is loaded (live) or installed next to nvidia.ko (offline)."""
    host = ctx.host
    blocked = driver.gate(host, ctx.params, "nvidia-uvm")
    if blocked:
        yield blocked
        return
    yield _live(host) if host.live else _offline(host)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.uvm``."""
    return [CheckSpec(
        id="gpu.uvm", title="The nvidia-uvm module is available",
        run=run, params_schema=driver.schema({}),
        description="Live: /sys/module/nvidia_uvm exists. Offline: nvidia-uvm.ko* "
                    "sits beside the nvidia.ko found for the newest kernel.")]
