"""``gpu.peermem``: where the node has RDMA HCAs, nvidia-peermem (GPUDirect RDMA) is loaded
and configured to load at boot.

Gathers the RDMA devices (``/sys/class/infiniband/<dev>``, live:
:mod:`aiaudit.linux.pci.rdma`), ``/sys/module/nvidia_peermem`` (loaded), the modules
loaded at boot (modules-load.d(5), Debian's ``/etc/modules``) and modprobe.d ``softdep``
lines (:mod:`aiaudit.linux.kmod.config`).  Decides: with RDMA devices the module must be
loaded and configured; loaded by hand only is drift.  The open kernel modules on Linux >=
5.12 can do GPUDirect RDMA through DMA-BUF without it (NVIDIA GPUDirect RDMA guide, "Using
DMA-BUF"), which the failure then says.
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
from aiaudit.linux.kmod import modprobe
from aiaudit.linux.pci.rdma import IB, rdma_devices

FIX = Remediation("Load nvidia-peermem at every boot (GPUDirect RDMA for NCCL/UCX over "
                  "InfiniBand or RoCE), and now.", (
                      Snippet.file("/etc/modules-load.d/nvidia-peermem.conf",
                                   "nvidia-peermem\n", "load nvidia-peermem at boot"),
                      Snippet.command("modprobe nvidia-peermem", "load it now")))


def _at_boot(host: Host) -> Evidence | None:
    """The modules-load.d line or modprobe.d softdep that loads nvidia-peermem at boot."""
    ev = kmod.modules_loaded_at_boot(host).get("nvidia_peermem")
    if ev:
        return ev
    for c in kmod.modprobe_config(host):
        if c.command == "softdep" and "nvidia_peermem" in {modprobe.norm(a) for a in c.args}:
            return Evidence.file(c.file, c.line, f"softdep {' '.join(c.args)}")
    return None


def _kernel_release(text: str) -> tuple[int, int] | None:
    """(major, minor) of a kernel release (``6.1.0-18-amd64`` -> ``(6, 1)``)."""
    parts = text.strip().split(".")
    try:
        return int(parts[0]), int(parts[1].split("-")[0])
    except (ValueError, IndexError):
        return None


def _dmabuf_possible(host: Host) -> bool:
    """Open NVIDIA kernel modules (``/proc/driver/nvidia/version`` says "Open Kernel
    Module") on Linux >= 5.12 (``/proc/sys/kernel/osrelease``): the kernel side of DMA-BUF
    GPUDirect RDMA (NVIDIA GPUDirect RDMA guide, "Using DMA-BUF")."""
    if not gs.kernel_side(host).open_module:
        return False
    rel = _kernel_release(host.try_read_text("/proc/sys/kernel/osrelease") or "")
    return rel is not None and rel >= (5, 12)


def _live(host: Host, devs: list[str], boot_ev: Evidence | None, at_boot: str) -> Result:
    """Live, with RDMA devices: loaded, and configured to load at boot."""
    loaded = kmod.is_loaded(host, "nvidia_peermem")
    ev = (Evidence.runtime("/sys/module/nvidia_peermem", "loaded" if loaded else "absent"),
          *((boot_ev,) if boot_ev else ()))
    hcas = f"RDMA devices {', '.join(devs[:8])}"
    if not loaded:
        dmabuf = ""
        if _dmabuf_possible(host):
            dmabuf = ("; this host has the open kernel modules and Linux >= 5.12, so NCCL >= "
                      "2.13 with a DMA-BUF capable rdma-core can do GPUDirect RDMA without "
                      "it: waive the rule if the jobs do")
        return Result(Status.FAIL, "nvidia-peermem", f"{hcas} but nvidia-peermem is not loaded "
                      f"(and {at_boot}): NCCL falls back to staging GPU data through host "
                      f"memory unless it uses DMA-BUF{dmabuf}", expected="loaded",
                      actual="not loaded", aspect=Aspect.RUNTIME, evidence=ev, remediation=FIX)
    if boot_ev is None:
        return Result(Status.FAIL, "nvidia-peermem", f"{hcas}; nvidia-peermem is loaded now "
                      f"but {at_boot}: it is gone after a reboot", expected="configured",
                      actual="loaded by hand", aspect=Aspect.DRIFT, evidence=ev,
                      remediation=FIX)
    return Result(Status.PASS, "nvidia-peermem", f"{hcas}; nvidia-peermem is loaded and "
                  f"{at_boot}", expected="loaded", actual="loaded", aspect=Aspect.RUNTIME,
                  evidence=ev)


def run(ctx: CheckContext) -> Iterator[Result]:
    """With RDMA HCAs, nvidia-peermem is loaded and configured to load at boot."""
    host = ctx.host
    blocked = driver.gate(host, ctx.params, "nvidia-peermem")
    if blocked:
        yield blocked
        return
    boot_ev = _at_boot(host)
    at_boot = (f"loaded at boot by {boot_ev.source}" if boot_ev else
               "not configured to load at boot (modules-load.d, /etc/modules, softdep)")
    if not host.live:
        if boot_ev:
            yield Result(Status.PASS, "nvidia-peermem", f"nvidia-peermem is {at_boot}",
                         expected="configured", actual="configured", aspect=Aspect.PERSISTED,
                         evidence=(boot_ev,))
        else:
            yield Result(Status.SKIP, "nvidia-peermem", "whether the node has RDMA HCAs is live "
                         f"state; nvidia-peermem is {at_boot}")
        return
    devs = rdma_devices(host)
    if not devs:
        yield Result(Status.SKIP, "nvidia-peermem", "no RDMA device in /sys/class/infiniband: "
                     "GPUDirect RDMA does not apply", evidence=(Evidence.runtime(IB),))
        return
    yield _live(host, devs, boot_ev, at_boot)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.peermem``."""
    return [CheckSpec(
        id="gpu.peermem", title="GPUDirect RDMA module is loaded where HCAs exist",
        run=run, params_schema=driver.schema({}),
        description="With RDMA devices in /sys/class/infiniband: "
                    "/sys/module/nvidia_peermem exists and modules-load.d, "
                    "/etc/modules or a modprobe.d softdep loads it at boot.")]
