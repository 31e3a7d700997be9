"""``iommu.passthrough``: where the IOMMU is on, GPU and HCA DMA bypasses translation
(identity domains).

Gathers, live, the active IOMMUs (``/sys/class/iommu/<unit>``,
Documentation/ABI/testing/sysfs-class-iommu), the GPUs and HCAs
(:mod:`aiaudit.linux.pci.devices`) and each one's ``iommu_group/type``
(sysfs-kernel-iommu_groups); offline, the kernel command line the host boots with
(:mod:`aiaudit.linux.boot.cmdline`) and the kernel build's default domain
(:mod:`aiaudit.linux.kernel.config`).  Decides as the kernel does
(:mod:`aiaudit.linux.pci.iommu`): no IOMMU, or an ``identity`` domain, passes; ``DMA`` or
``DMA-FQ`` fails (every DMA translated: IOTLB misses cost RDMA and P2P bandwidth);
``unmanaged`` (VFIO) is skipped.  Offline ``iommu=pt``, ``iommu.passthrough=1``, an
IOMMU switched off or ``CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y`` passes.
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
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.boot import cmdline as boot
from aiaudit.linux.gpu import driver
from aiaudit.linux.pci import iommu
from aiaudit.linux.pci.devices import PCI, PciDev, pci_devices

Boot = tuple[bool, str, tuple[Evidence, ...]]
"""(untranslated DMA at the next boot?, how, evidence)."""


def _booted_cmdline(host: Host) -> boot.CmdlineSource | None:
    try:
        return boot.load(host).booted
    except (HostError, ParseError):
        return None


def _build_default(host: Host, where: str, cev: tuple[Evidence, ...],
                   cl: boot.CmdlineSource | None) -> Boot:
    """The command line says nothing: the kernel's build default
    (``CONFIG_IOMMU_DEFAULT_*``, drivers/iommu/Kconfig) decides, where it is known."""
    from aiaudit.linux.kernel.config import kernel_config, kernel_config_missing

    kc = kernel_config(host)
    if kc is not None:
        path, text = kc
        found = iommu.default_domain(text)
        if found is not None:
            pt, n, line = found
            how = (f"{where}; the kernel defaults to passthrough ({path.lstrip('/')}:{n})"
                   if pt else f"{where}; the kernel defaults to translated DMA "
                   f"({path.lstrip('/')}:{n})")
            return pt, how, (*cev, Evidence.file(path, n, line))
        default = f"{path.lstrip('/')} has no CONFIG_IOMMU_DEFAULT_* choice"
    else:
        default = kernel_config_missing(host)
    if cl is None:
        cev = (Evidence.default(f"iommu=pt at boot: {boot.not_found()}",
                                f"kernel default DMA domain (CONFIG_IOMMU_DEFAULT_*) unknown: "
                                f"{default}"),)
    else:
        cev = (*cev, Evidence.default("kernel default DMA domain (CONFIG_IOMMU_DEFAULT_*)",
                                      f"unknown: {default}"))
    return False, where, cev


def _at_boot(host: Host, cl: boot.CmdlineSource | None) -> Boot:
    """Do host devices get untranslated DMA at the next boot?  From the command line, else
    the kernel's build default."""
    decided = iommu.cmdline_mode(cl.params) if cl is not None else None
    if cl is not None and decided is not None:
        mode, prm = decided
        how = {iommu.OFF: f"{prm} disables the IOMMU", iommu.PASSTHROUGH: f"{prm} (passthrough)",
               iommu.TRANSLATED: f"{prm} (translated DMA)"}[mode]
        return mode != iommu.TRANSLATED, f"{how} ({cl.where(prm.name)})", \
            (cl.evidence(prm.name),)
    where = "no kernel command line found" if cl is None else \
        f"no iommu=pt on the kernel command line ({cl.where()})"
    cev = (Evidence.default(f"iommu=pt at boot: {boot.not_found()}"),) if cl is None else \
        (cl.evidence(),)
    return _build_default(host, where, cev, cl)


def _offline(ok: bool, how: str, cev: tuple[Evidence, ...], fix: Remediation) -> Result:
    if ok:
        return Result(Status.PASS, "iommu", f"at boot: {how}", expected="iommu=pt",
                      actual="iommu=pt", aspect=Aspect.PERSISTED, evidence=cev)
    return Result(Status.FAIL, "iommu", f"at boot: {how}; where the IOMMU is on (AMD by "
                  "default, Intel with intel_iommu=on or CONFIG_INTEL_IOMMU_DEFAULT_ON) "
                  "every GPU and HCA DMA is translated and peer-to-peer traffic may be "
                  "routed through the root complex", expected="iommu=pt",
                  actual="not set", aspect=Aspect.PERSISTED, evidence=cev, remediation=fix)


def _device(host: Host, d: PciDev, how: str, cev: tuple[Evidence, ...],
            fix: Remediation) -> Result:
    """Live, IOMMU on: the device's domain type."""
    subject = f"{d.kind} {d.bdf}"
    tpath = f"{PCI}/{d.bdf}/iommu_group/type"
    try:
        kind = host.read_text(tpath).strip()
    except HostError:
        return Result(Status.SKIP, subject, "no iommu_group/type (kernel < 5.11 or no group)")
    ev = (Evidence.runtime(tpath, kind), *cev)
    if kind == "identity":
        return Result(Status.PASS, subject, "IOMMU domain is identity (passthrough)",
                      expected="identity", actual=kind, aspect=Aspect.RUNTIME, evidence=ev)
    if kind == "unmanaged":
        return Result(Status.SKIP, subject, "the device is assigned to a VM/VFIO "
                      "(unmanaged IOMMU domain)", evidence=ev)
    return Result(Status.FAIL, subject, f"IOMMU domain is {kind}: every DMA is "
                  f"translated (IOTLB misses cost RDMA and P2P bandwidth); {how}",
                  expected="identity", actual=kind, aspect=Aspect.RUNTIME, evidence=ev,
                  remediation=fix)


def run(ctx: CheckContext) -> Iterator[Result]:
    """Where the IOMMU is on, GPUs and HCAs are in passthrough (identity) domains."""
    from aiaudit.linux.rootkind import cmdline_skip, container_skip

    host = ctx.host
    skip = container_skip(host, "iommu", "the IOMMU mode")
    if skip is not None:
        yield skip
        return
    ok, how, cev = _at_boot(host, _booted_cmdline(host))
    bcfg = boot.load(host)
    fix = boot.params_remediation(host, bcfg, ["iommu=pt"],
                                  lead="Use IOMMU passthrough for host devices: ")
    if not host.live and bcfg.booted is None and bcfg.unknown:
        blocked = driver.gate(host, ctx.params, "iommu")
        yield blocked or cmdline_skip(host, "iommu", bcfg.unknown)
        return
    if not host.live:
        blocked = driver.gate(host, ctx.params, "iommu")
        yield blocked or _offline(ok, how, cev, fix)
        return
    if not host.listdir("/sys/class/iommu"):
        yield Result(Status.PASS, "iommu", "no IOMMU is active (/sys/class/iommu is empty): "
                     "device DMA is not translated", expected="off or passthrough",
                     actual="off", aspect=Aspect.RUNTIME,
                     evidence=(Evidence.runtime("/sys/class/iommu", ""),))
        return
    devs = [d for d in pci_devices(host) if d.kind in ("GPU", "HCA") and not d.virtfn]
    if not devs:
        yield Result(Status.SKIP, "iommu", "IOMMU on, but no GPU or HCA on the PCI bus")
        return
    for d in devs:
        yield _device(host, d, how, cev, fix)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``iommu.passthrough``."""
    return [CheckSpec(
        id="iommu.passthrough", title="GPU and HCA DMA bypasses IOMMU translation",
        run=run, params_schema=driver.schema({}),
        description="Live: /sys/class/iommu empty (off) or the devices' "
                    "iommu_group/type is identity. Offline: iommu=pt (or "
                    "iommu.passthrough=1, or the IOMMU off) on the booted command "
                    "line.")]
