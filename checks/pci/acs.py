"""``pci.acs``: no PCIe bridge between a GPU (or, for GPUDirect RDMA, an HCA) and its root
port redirects peer-to-peer traffic (live).

Gathers the PCI functions and their upstream bridges (:mod:`aiaudit.linux.pci.devices`)
and each bridge's configuration space (``/sys/bus/pci/devices/<BDF>/config``, 4096 bytes
when the scan may read the extended space).  Decides with the ACS Control register
(:mod:`aiaudit.linux.pci.acs`; PCI Express Base Specification 6.0, 7.7.8): P2P Request or
Completion Redirect on any bridge of the path fails (the traffic goes up to the root
complex); a configuration space the kernel shows only 64 bytes of (a reader without
CAP_SYS_ADMIN, drivers/pci/pci-sysfs.c ``pci_read_config``) is an error.  Applies where
there are two GPUs, or a GPU and an HCA; GPUs are NVIDIA's and AMD's (AMD's tuning guides
ask for ACS off for peer-to-peer between GPUs and NICs over PCIe, as NCCL's and RCCL's do).
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
from aiaudit.linux.pci import acs
from aiaudit.linux.pci.devices import PCI, PciDev, pci_devices

FIX = Remediation("Disable ACS on the PCIe switches in the BIOS (or NVIDIA's bare-metal "
                  "recipe with setpci), or keep the IOMMU on for isolation and accept the "
                  "P2P cost; then confirm with `nvidia-smi topo -p2p r`.")
AMD_FIX = Remediation("Disable ACS on the PCIe switches in the BIOS (or with setpci at "
                      "boot, as AMD's multi-GPU guides describe), or keep the IOMMU on for "
                      "isolation and accept the P2P cost; then confirm with "
                      "`amd-smi topology` (or `rocm-smi --showtopo`).")


def _path(host: Host, dev: PciDev, by_path: dict[str, PciDev]
          ) -> tuple[list[str], list[str], list[str]]:
    """(bridges that redirect P2P, bridges whose extended space cannot be read, bridges
    checked) from ``dev`` up to its root port."""
    bad: list[str] = []
    unread: list[str] = []
    checked: list[str] = []
    up = dev.upstream
    while up and up in by_path:
        br = by_path[up]
        try:
            ctl = acs.acs_control(host.read_bytes(f"{PCI}/{br.bdf}/config",
                                                  cap=acs.CONFIG_SIZE))
        except (HostError, ParseError):
            unread.append(br.bdf)
            ctl = None
        if ctl is not None:
            checked.append(br.bdf)
            if acs.redirects_p2p(ctl):
                bad.append(f"{br.bdf} (ACS control 0x{ctl:04x})")
        up = br.upstream
    return bad, unread, checked


def _judge(host: Host, dev: PciDev, by_path: dict[str, PciDev], iommu_on: bool,
           fix: Remediation) -> Result:
    """One GPU or HCA: its path to the root port."""
    subject = f"{dev.kind} {dev.bdf}"
    bad, unread, checked = _path(host, dev, by_path)
    ev = tuple(Evidence.runtime(f"{PCI}/{b.split()[0]}/config") for b in bad or unread)
    if bad:
        return Result(Status.FAIL, subject, f"ACS P2P redirect is on at {', '.join(bad)}: "
                      "GPU peer-to-peer traffic is sent up to the root complex (and "
                      "through the IOMMU" + (")" if iommu_on else ", which is off: it may "
                      "hang or be refused)"), expected="P2P redirect off",
                      actual="redirect on", aspect=Aspect.RUNTIME, evidence=ev,
                      remediation=fix)
    if unread:
        return Result(Status.ERROR, subject, "the extended configuration space of "
                      f"{', '.join(unread)} cannot be read (the kernel shows only 64 bytes "
                      "to readers without CAP_SYS_ADMIN): run the scan as root", evidence=ev)
    return Result(Status.PASS, subject, f"no bridge above the {dev.kind} redirects P2P "
                  "requests" + (f" (checked {', '.join(checked)})" if checked else
                                " (no ACS capability on the path)"),
                  expected="P2P redirect off", actual="off", aspect=Aspect.RUNTIME)


def run(ctx: CheckContext) -> Iterator[Result]:
    """No bridge between a GPU (or an HCA, for GPUDirect RDMA) and its root port redirects
    peer-to-peer requests."""
    host = ctx.host
    if not host.live:
        yield Result(Status.SKIP, "acs", "the ACS setting of PCIe ports is live state; an "
                     "offline scan cannot see it")
        return
    by_path = {d.path: d for d in pci_devices(host)}
    gpus = [d for d in by_path.values() if d.is_gpu and not d.virtfn]
    hcas = [d for d in by_path.values() if d.is_hca and not d.virtfn]
    if len(gpus) < 2 and not (gpus and hcas):
        yield Result(Status.SKIP, "acs", f"{len(gpus)} GPU(s) and {len(hcas)} HCA(s): "
                     "no PCIe peer-to-peer path between GPUs or GPU and HCA")
        return
    iommu_on = bool(host.listdir("/sys/class/iommu"))
    fix = FIX if any(d.is_nvidia_gpu for d in gpus) else AMD_FIX
    for dev in gpus + (hcas if gpus else []):
        yield _judge(host, dev, by_path, iommu_on, fix)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``pci.acs``."""
    return [CheckSpec(
        id="pci.acs", title="PCIe switches do not redirect GPU peer-to-peer traffic",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False},
        description="For each bridge between a GPU (NVIDIA or AMD; or, with GPUs, an "
                    "HCA) and its root port: the ACS "
                    "Control register (extended config space, readable as root) has "
                    "P2P Request/Completion Redirect off.")]
