"""GPU node readiness: what a multi-GPU training node needs beyond a working driver.

``gpu.nouveau`` and ``gpu.uvm`` (kernel modules), ``gpu.fabricmanager`` (NVSwitch systems),
``gpu.peermem`` (GPUDirect RDMA), ``pci.link`` (PCIe width/speed of GPUs and HCAs),
``iommu.passthrough`` and ``pci.acs`` (peer-to-peer paths), ``rdma.ports`` (InfiniBand/RoCE
port state and rate), ``network.fabric_mtu``, ``irq.balance`` and ``gpu.smi_health``
(``nvidia-smi -q -x``: ECC, pending page retirement / row remapping, clock event reasons).

Sources for every path and format:

- PCI devices: Documentation/ABI/testing/sysfs-bus-pci (``vendor``, ``class``,
  ``current_link_speed``, ``max_link_speed``, ``current_link_width``, ``max_link_width``,
  ``msi_irqs/``, ``iommu_group``, ``config``); formats in :mod:`aiaudit.linux.pci`.
  ``/sys/bus/pci/devices/<BDF>`` links to ``/sys/devices/pci<dom>:<bus>/<port>/.../<BDF>``;
  the directory above a device is its upstream bridge (drivers/base/core.c names device
  directories after their parents), which is how the upstream port is found.
- NVSwitch: NVIDIA vendor id 0x10de with PCI class 0x0680 ("other bridge"), as listed by
  ``lspci`` on HGX/DGX baseboards; Fabric Manager User Guide ("the Fabric Manager and
  driver versions must match").
- IOMMU: Documentation/ABI/testing/sysfs-class-iommu (``/sys/class/iommu/<unit>`` exists
  for each active IOMMU) and sysfs-kernel-iommu_groups (``type``: ``identity`` for
  passthrough, ``DMA`` / ``DMA-FQ`` for translated, ``unmanaged`` for VFIO);
  admin-guide/kernel-parameters.txt (``iommu=pt``, ``iommu.passthrough=1``).
- ACS: PCI Express Base Specification 6.0, 7.7.8 (ACS Extended Capability, id 0x000D; ACS
  Control register at +6: P2P Request Redirect bit 2, Completion Redirect bit 3);
  include/uapi/linux/pci_regs.h (``PCI_EXT_CAP_ID_ACS``, ``PCI_ACS_RR``, ``PCI_ACS_CR``).
  The kernel returns only the first 64 bytes of ``config`` to a reader without
  CAP_SYS_ADMIN (drivers/pci/pci-sysfs.c ``pci_read_config``), so ACS is evaluated only
  when the scan can read the extended space; otherwise the result says so.
- RDMA ports: Documentation/ABI/stable/sysfs-class-infiniband (``ports/<n>/state``,
  ``rate``, ``link_layer``, ``device/net/<netdev>``).
- RoCE MTU: include/rdma/ib_addr.h ``iboe_get_mtu`` (the IB path MTU is the largest of
  256..4096 that fits in the netdev MTU minus 96 bytes of GRH, UDP, BTH, extended and ICRC
  headers): a netdev MTU of at least 4192 gives the 4096-byte IB MTU.
- IRQs: Documentation/core-api/irq/irq-affinity.rst (``/proc/irq/<n>/smp_affinity_list``),
  Documentation/ABI/testing/sysfs-devices-system-cpu (``/sys/devices/system/cpu/online``).
- Modules: ``/sys/module/<name>`` exists while a module is loaded
  (Documentation/ABI/testing/sysfs-module); modprobe.d(5), modules-load.d(5); kmod reads
  ``modprobe.blacklist=`` from the kernel command line.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from aiaudit.checks import legacy_gpu as gpu_checks

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
from aiaudit.core.records import record
from aiaudit.linux import pci as pcisysfs
from aiaudit.linux.boot import cmdline as boot
from aiaudit.linux.boot.loaders import Param
from aiaudit.linux.gpu import nvsmi
from aiaudit.linux.gpu import stack as gs
from aiaudit.linux.kmod import modprobe
from aiaudit.linux.packages.dpkg import upstream_version
from aiaudit.linux.packages.installed import DPKG_STATUS, dpkg_installed
from aiaudit.linux.sysfs import parse_cpulist

PCI = "/sys/bus/pci/devices"
IB = "/sys/class/infiniband"
NVIDIA = 0x10DE
MELLANOX = 0x15B3
MODPROBE_DIRS = ("/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d",
                 "/lib/modprobe.d", "/usr/lib/modprobe.d")
"""kmod's configuration directories, highest priority first (modprobe.d(5))."""
MODULES_LOAD_DIRS = ("/etc/modules-load.d", "/run/modules-load.d",
                     "/usr/local/lib/modules-load.d", "/usr/lib/modules-load.d",
                     "/lib/modules-load.d")
"""systemd-modules-load's directories, highest priority first (modules-load.d(5))."""
FABRICMANAGER = "nvidia-fabricmanager.service"
IRQBALANCE = "irqbalance.service"
MAX_PCI = 4096
"""Most PCI functions examined (large hosts have ~1000)."""
ACS_CAP_ID = 0x000D
ACS_RR, ACS_CR = 0x0004, 0x0008
ROCE_OVERHEAD = 96
"""Bytes ``iboe_get_mtu`` subtracts from the netdev MTU (GRH 40, UDP 8, BTH 12, XRC 4,
AtomicETH 28, ICRC 4)."""


# ------------------------------------------------------------------ PCI inventory
@record
class PciDev:
    """One PCI function as sysfs shows it."""

    bdf: str
    vendor: int
    klass: int
    """24-bit class code (``0x030200``)."""
    path: str
    """Resolved host path under /sys/devices."""
    upstream: str | None
    """Resolved path of the bridge above it, when that is a PCI device."""
    virtfn: bool = False

    @property
    def is_nvidia_gpu(self) -> bool:
        """An NVIDIA display/3D controller."""
        return self.vendor == NVIDIA and self.klass >> 16 == pcisysfs.PCI_CLASS_DISPLAY

    @property
    def is_nvswitch(self) -> bool:
        """An NVIDIA "other bridge": an NVSwitch."""
        return self.vendor == NVIDIA and self.klass >> 8 == pcisysfs.PCI_CLASS_BRIDGE_OTHER

    @property
    def is_hca(self) -> bool:
        """An InfiniBand controller, or a Mellanox/NVIDIA network adapter (RoCE)."""
        if self.klass >> 8 == 0x0207:
            return True
        return self.vendor == MELLANOX and self.klass >> 16 == pcisysfs.PCI_CLASS_NETWORK

    @property
    def kind(self) -> str:
        """``GPU``, ``NVSwitch``, ``HCA`` or ``device``."""
        if self.is_nvidia_gpu:
            return "GPU"
        if self.is_nvswitch:
            return "NVSwitch"
        return "HCA" if self.is_hca else "device"


def _is_bdf(name: str) -> bool:
    parts = name.split(":")
    return len(parts) == 3 and "." in parts[2] and len(parts[0]) == 4


def pci_devices(host: Host) -> list[PciDev]:
    """Every PCI function (live only; ``[]`` offline), read once per run."""

    def load() -> list[PciDev]:
        if not host.live:
            return []
        out: list[PciDev] = []
        for bdf in sorted(host.listdir(PCI))[:MAX_PCI]:
            base = f"{PCI}/{bdf}"
            try:
                vendor = pcisysfs.parse_hex(host.read_text(f"{base}/vendor"), 16)
                klass = pcisysfs.parse_hex(host.read_text(f"{base}/class"), 24)
                real = host.resolve(base)
            except (HostError, ParseError):
                continue
            parent = real.rsplit("/", 1)[0]
            up = parent if _is_bdf(parent.rsplit("/", 1)[-1]) else None
            out.append(PciDev(bdf, vendor, klass, real, up,
                              host.lstat_exists(f"{base}/physfn")))
        return out

    return host.memo(("pci-devices",), load)


def _live_only(subject: str, what: str) -> Result:
    return Result(Status.SKIP, subject, f"{what} is live state; an offline scan cannot see it")


def _module_loaded(host: Host, name: str) -> bool:
    return host.is_dir(f"/sys/module/{modprobe.norm(name)}")


def _conf_files(host: Host, dirs: tuple[str, ...]) -> list[str]:
    """``*.conf`` of ``dirs`` by basename (first directory wins), in basename order;
    masked (``/dev/null``) files left out."""
    chosen: dict[str, str] = {}
    for d in dirs:
        for n in host.listdir(d):
            if n.endswith(".conf") and n not in chosen:
                chosen[n] = f"{d}/{n}"
    return [chosen[n] for n in sorted(chosen) if not host.is_masked(chosen[n])]


def modprobe_config(host: Host) -> list[modprobe.Command]:
    """Every modprobe.d command of the scanned root, in kmod's order."""

    def load() -> list[modprobe.Command]:
        out: list[modprobe.Command] = []
        for path in _conf_files(host, MODPROBE_DIRS):
            try:
                out += modprobe.parse_modprobe(host.read_text(path), path)
            except (HostError, ParseError):
                continue
        return out

    return host.memo(("modprobe-d",), load)


def modules_loaded_at_boot(host: Host) -> dict[str, Evidence]:
    """Modules systemd-modules-load (and Debian's ``/etc/modules``) loads at boot."""

    def load() -> dict[str, Evidence]:
        out: dict[str, Evidence] = {}
        files = _conf_files(host, MODULES_LOAD_DIRS)
        if host.is_file("/etc/modules"):
            files.append("/etc/modules")
        for path in files:
            try:
                for name, line in modprobe.parse_modules_load(host.read_text(path), path):
                    out.setdefault(modprobe.norm(name), Evidence.file(path, line, name))
            except (HostError, ParseError):
                continue
        return out

    return host.memo(("modules-load-d",), load)


def _boot_cmdline(host: Host) -> boot.CmdlineSource | None:
    try:
        return boot.load(host).booted
    except (HostError, ParseError):
        return None


def _schema(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False,
            "properties": {"require_gpu": gpu_checks._REQUIRE_GPU, **props}}


# ------------------------------------------------------------------ nouveau
NOUVEAU_CMDLINE = ("modprobe.blacklist", "rd.driver.blacklist", "module_blacklist")
"""Kernel parameters whose comma list keeps a module from loading (kmod, dracut, the
kernel's own module loader)."""


def _nouveau_disabled(host: Host) -> tuple[bool, str, tuple[Evidence, ...]]:
    """Is nouveau kept from binding at boot?  (disabled?, how, evidence)."""
    for c in modprobe_config(host):
        if not c.args or modprobe.norm(c.args[0]) != "nouveau":
            continue
        ev = (Evidence.file(c.file, c.line, f"{c.command} {' '.join(c.args)}"),)
        if c.command == "blacklist":
            return True, f"blacklisted ({c.file}:{c.line})", ev
        if c.command == "install" and len(c.args) > 1 and c.args[1].endswith(
                ("/false", "/true")):
            return True, f"install is {c.args[1]} ({c.file}:{c.line})", ev
        if c.command == "options" and any(a.replace("-", "_") == "modeset=0"
                                          for a in c.args[1:]):
            return True, f"options nouveau modeset=0 ({c.file}:{c.line})", ev
    cl = _boot_cmdline(host)
    if cl is not None:
        for name in NOUVEAU_CMDLINE:
            p = cl.get(name)
            if p and p.value and "nouveau" in [modprobe.norm(v) for v in p.value.split(",")]:
                return True, f"{p} on the kernel command line ({cl.where()})", (cl.evidence(name),)
        p = cl.get("nouveau.modeset")
        if p and p.value == "0":
            return True, f"nouveau.modeset=0 on the kernel command line ({cl.where()})", (
                cl.evidence("nouveau.modeset"),)
    where = f"on {cl.where()}" if cl is not None else f"({boot.not_found()})"
    dirs = ", ".join(f"{d.lstrip('/')}/*.conf" for d in MODPROBE_DIRS)
    return False, "no modprobe.d 'blacklist nouveau' and no modprobe.blacklist=nouveau", (
        Evidence.default(f"nouveau at boot: no blacklist, install or options modeset=0 for "
                         f"nouveau in {dirs}; no nouveau in "
                         f"{' or '.join(n + '=' for n in NOUVEAU_CMDLINE)} and no "
                         f"nouveau.modeset=0 {where}",
                         "kernel default: nouveau loads for an NVIDIA GPU (its PCI modalias)"),)


NOUVEAU_FIX = Remediation(
    "Blacklist nouveau so the NVIDIA driver can bind the GPUs, rebuild the initramfs (it "
    "carries its own copy of modprobe.d) and reboot.",
    (Snippet.file("/etc/modprobe.d/blacklist-nouveau.conf",
                  "blacklist nouveau\noptions nouveau modeset=0\n",
                  "keep nouveau from loading"),
     Snippet.command("update-initramfs -u  # or: dracut --force",
                     "rebuild the initramfs with the blacklist")))


def run_nouveau(ctx: CheckContext) -> Iterator[Result]:
    """nouveau is blacklisted (persisted) and not loaded (runtime)."""
    host = ctx.host
    blocked = gpu_checks.gate(host, ctx.params, "nouveau")
    if blocked:
        yield blocked
        return
    ok, how, ev = _nouveau_disabled(host)
    if host.live:
        loaded = _module_loaded(host, "nouveau")
        rev = (Evidence.runtime("/sys/module/nouveau", "loaded" if loaded else "absent"), *ev)
        if loaded:
            yield Result(Status.FAIL, "nouveau", f"the nouveau module is loaded; at boot: {how}"
                         , expected="not loaded", actual="loaded", aspect=Aspect.RUNTIME,
                         evidence=rev, remediation=NOUVEAU_FIX)
        elif not ok:
            yield Result(Status.FAIL, "nouveau", f"nouveau is not loaded now, but {how}: it "
                         "can bind the GPUs at the next boot", expected="blacklisted",
                         actual="not blacklisted", aspect=Aspect.DRIFT, evidence=rev,
                         remediation=NOUVEAU_FIX)
        else:
            yield Result(Status.PASS, "nouveau", f"nouveau is not loaded and is {how}",
                         expected="not loaded", actual="not loaded", aspect=Aspect.RUNTIME,
                         evidence=rev)
        return
    if ok:
        yield Result(Status.PASS, "nouveau", f"nouveau is {how}", expected="blacklisted",
                     actual="blacklisted", aspect=Aspect.PERSISTED, evidence=ev)
    else:
        yield Result(Status.FAIL, "nouveau", f"{how}: nouveau binds the GPUs at boot before "
                     "the NVIDIA driver", expected="blacklisted", actual="not blacklisted",
                     aspect=Aspect.PERSISTED, evidence=ev, remediation=NOUVEAU_FIX)


# ------------------------------------------------------------------ nvidia-uvm
def run_uvm(ctx: CheckContext) -> Iterator[Result]:
    """nvidia-uvm is loaded (live) or installed next to nvidia.ko (offline)."""
    host = ctx.host
    blocked = gpu_checks.gate(host, ctx.params, "nvidia-uvm")
    if blocked:
        yield blocked
        return
    fix = Remediation("Load nvidia-uvm now and at every boot (CUDA needs /dev/nvidia-uvm; a "
                      "container cannot load it).", (
                          Snippet.file("/etc/modules-load.d/nvidia-uvm.conf", "nvidia-uvm\n",
                                       "load nvidia-uvm at boot"),
                          Snippet.command("modprobe nvidia-uvm", "load it now")))
    if host.live:
        loaded = _module_loaded(host, "nvidia_uvm")
        ev = (Evidence.runtime("/sys/module/nvidia_uvm", "loaded" if loaded else "absent"),)
        if loaded:
            yield Result(Status.PASS, "nvidia-uvm", "the nvidia_uvm module is loaded",
                         expected="loaded", actual="loaded", aspect=Aspect.RUNTIME,
                         evidence=ev)
        else:
            yield Result(Status.FAIL, "nvidia-uvm", "the nvidia_uvm module is not loaded: CUDA "
                         "programs fail with 'no CUDA-capable device' until something loads "
                         "it (nvidia-modprobe does so only where it is installed setuid and "
                         "not inside containers)", expected="loaded", actual="not loaded",
                         aspect=Aspect.RUNTIME, evidence=ev, remediation=fix)
        return
    ks = gs.kernel_side(host)
    inst = ks.installed
    if inst is None or not inst.evidence.path or not inst.evidence.path.endswith(
            tuple(f"nvidia.ko{s}" for s in ("", ".xz", ".gz", ".zst"))):
        yield Result(Status.SKIP, "nvidia-uvm", "no nvidia.ko module file in this root to look "
                     "beside (driver known only from the package database)")
        return
    d = inst.evidence.path.rsplit("/", 1)[0]
    found = [n for n in host.listdir(d) if n.startswith("nvidia-uvm.ko")]
    if found:
        yield Result(Status.PASS, "nvidia-uvm", f"{d}/{found[0]} is installed beside nvidia.ko",
                     expected="installed", actual="installed", aspect=Aspect.PERSISTED,
                     evidence=(Evidence.file(f"{d}/{found[0]}"),))
    else:
        yield Result(Status.FAIL, "nvidia-uvm", f"no nvidia-uvm.ko beside {inst.evidence.path}: "
                     "CUDA cannot create /dev/nvidia-uvm", expected="installed",
                     actual="absent", aspect=Aspect.PERSISTED,
                     evidence=(inst.evidence,), remediation=Remediation(
                         "Reinstall the driver's kernel modules (DKMS builds nvidia, "
                         "nvidia-uvm, nvidia-modeset and nvidia-drm together)."))


# ------------------------------------------------------------------ fabric manager
def _fm_package(host: Host) -> tuple[str, str] | None:
    for name, ver in sorted(gs.nvidia_packages(host).items()):
        if name.startswith(("nvidia-fabricmanager", "nvidia-fabric-manager")) and \
                "devel" not in name and "-dev" not in name:
            return name, ver
    return None


def run_fabricmanager(ctx: CheckContext) -> Iterator[Result]:
    """NVSwitch systems run nvidia-fabricmanager of the driver's exact version."""
    from aiaudit.linux.systemd.units import is_enabled

    host = ctx.host
    switches = [d for d in pci_devices(host) if d.is_nvswitch]
    pkg = _fm_package(host)
    if host.live and not switches:
        yield Result(Status.SKIP, "nvswitch", "no NVSwitch on the PCI bus (no NVIDIA device of "
                     "class 0x0680): Fabric Manager is not needed",
                     evidence=(Evidence.runtime(PCI),))
        return
    if not host.live and pkg is None:
        yield Result(Status.SKIP, "nvswitch", "NVSwitches are seen only live (PCI bus) and "
                     "nvidia-fabricmanager is not installed in this root")
        return
    drv = gpu_checks.driver_version(host)
    branch = drv.version.split(".")[0] if drv else "<branch>"
    where = (f"{len(switches)} NVSwitch(es) at {', '.join(d.bdf for d in switches[:8])}"
             if switches else "nvidia-fabricmanager is installed")
    sev = tuple(Evidence.runtime(f"{PCI}/{d.bdf}/class", f"0x{d.klass:06x}")
                for d in switches[:8])
    install = Remediation(
        f"Install nvidia-fabricmanager-{branch} of exactly the driver's version and enable it "
        "(without it CUDA on an NVSwitch system reports 'system not yet initialized').", (
            Snippet.command(f"apt-get install nvidia-fabricmanager-{branch}"
                            + (f"={drv.version}-1" if drv else ""),
                            "install Fabric Manager matching the driver"),
            Snippet.command("systemctl enable --now nvidia-fabricmanager",
                            "start it now and at every boot")))
    if pkg is None:
        yield Result(Status.FAIL, "nvidia-fabricmanager", f"{where} but nvidia-fabricmanager "
                     "is not installed: the GPUs cannot use NVLink and CUDA initialisation "
                     "fails", expected="installed", actual="absent", evidence=sev,
                     remediation=install)
        return
    name, ver = pkg
    try:
        in_dpkg = name in dpkg_installed(host, (name,))
    except (HostError, ParseError):
        in_dpkg = False
    db = DPKG_STATUS if in_dpkg else gs.RPMDB_SQLITE
    pev = Evidence.file(db, None, f"{name} {ver}")
    fm = upstream_version(ver)
    if drv is None:
        yield Result(Status.ERROR, "nvidia-fabricmanager", f"{name} {fm} is installed but the "
                     "driver version cannot be determined", evidence=(pev, *sev))
        return
    if fm != drv.version:
        yield Result(Status.FAIL, "nvidia-fabricmanager", f"{name} is {fm} but the "
                     f"{drv.what} is {drv.version}: Fabric Manager refuses to start on a "
                     "version mismatch", expected=drv.version, actual=fm,
                     evidence=(pev, drv.evidence, *sev), remediation=install,
                     data={"fabricmanager": fm, "driver": drv.version})
        return
    en = is_enabled(host, FABRICMANAGER)
    eev = (Evidence.file(en.evidence),) if en.evidence else ()
    if not en.enabled:
        yield Result(Status.FAIL, "nvidia-fabricmanager", f"{name} {fm} matches the driver but "
                     f"{en.reason}: after a reboot the NVSwitch fabric is not set up",
                     expected="enabled", actual="disabled", aspect=Aspect.PERSISTED,
                     evidence=(pev, drv.evidence, *eev, *sev), remediation=Remediation(
                         "Enable nvidia-fabricmanager.", (
                             Snippet.enable(FABRICMANAGER, "start it at every boot"),)))
        return
    yield Result(Status.PASS, "nvidia-fabricmanager", f"{where}; {name} {fm} matches the "
                 f"driver and {en.reason}", expected=drv.version, actual=fm,
                 aspect=Aspect.PERSISTED, evidence=(pev, drv.evidence, *eev, *sev))


# ------------------------------------------------------------------ nvidia-peermem
def _peermem_at_boot(host: Host) -> Evidence | None:
    ev = modules_loaded_at_boot(host).get("nvidia_peermem")
    if ev:
        return ev
    for c in modprobe_config(host):
        if c.command == "softdep" and "nvidia_peermem" in {modprobe.norm(a) for a in c.args}:
            return Evidence.file(c.file, c.line, f"softdep {' '.join(c.args)}")
    return None


def _dmabuf_possible(host: Host) -> bool:
    """Open NVIDIA kernel modules (``/proc/driver/nvidia/version`` says "Open Kernel
    Module") on Linux >= 5.12 (``/proc/sys/kernel/osrelease``): the kernel side of DMA-BUF
    GPUDirect RDMA (NVIDIA GPUDirect RDMA guide, "Using DMA-BUF")."""
    if not gs.kernel_side(host).open_module:
        return False
    rel = (host.try_read_text("/proc/sys/kernel/osrelease") or "").strip()
    parts = rel.split(".")
    try:
        return (int(parts[0]), int(parts[1].split("-")[0])) >= (5, 12)
    except (ValueError, IndexError):
        return False


def rdma_devices(host: Host) -> list[str]:
    """RDMA devices (``/sys/class/infiniband/<dev>``), live only."""
    return sorted(host.listdir(IB)) if host.live else []


def run_peermem(ctx: CheckContext) -> Iterator[Result]:
    """With RDMA HCAs, nvidia-peermem is loaded and configured to load at boot."""
    host = ctx.host
    blocked = gpu_checks.gate(host, ctx.params, "nvidia-peermem")
    if blocked:
        yield blocked
        return
    boot_ev = _peermem_at_boot(host)
    fix = Remediation("Load nvidia-peermem at every boot (GPUDirect RDMA for NCCL/UCX over "
                      "InfiniBand or RoCE), and now.", (
                          Snippet.file("/etc/modules-load.d/nvidia-peermem.conf",
                                       "nvidia-peermem\n", "load nvidia-peermem at boot"),
                          Snippet.command("modprobe nvidia-peermem", "load it now")))
    at_boot = (f"loaded at boot by {boot_ev.source}" if boot_ev else
               "not configured to load at boot (modules-load.d, /etc/modules, softdep)")
    bev = (boot_ev,) if boot_ev else ()
    if not host.live:
        if boot_ev:
            yield Result(Status.PASS, "nvidia-peermem", f"nvidia-peermem is {at_boot}",
                         expected="configured", actual="configured", aspect=Aspect.PERSISTED,
                         evidence=bev)
        else:
            yield Result(Status.SKIP, "nvidia-peermem", "whether the node has RDMA HCAs is live "
                         f"state; nvidia-peermem is {at_boot}")
        return
    devs = rdma_devices(host)
    if not devs:
        yield Result(Status.SKIP, "nvidia-peermem", "no RDMA device in /sys/class/infiniband: "
                     "GPUDirect RDMA does not apply", evidence=(Evidence.runtime(IB),))
        return
    loaded = _module_loaded(host, "nvidia_peermem")
    ev = (Evidence.runtime("/sys/module/nvidia_peermem", "loaded" if loaded else "absent"),
          *bev)
    hcas = f"RDMA devices {', '.join(devs[:8])}"
    if not loaded:
        dmabuf = ""
        if _dmabuf_possible(host):
            dmabuf = ("; this host has the open kernel modules and Linux >= 5.12, so NCCL >= "
                      "2.13 with a DMA-BUF capable rdma-core can do GPUDirect RDMA without "
                      "it: waive the rule if the jobs do")
        yield Result(Status.FAIL, "nvidia-peermem", f"{hcas} but nvidia-peermem is not loaded "
                     f"(and {at_boot}): NCCL falls back to staging GPU data through host "
                     f"memory unless it uses DMA-BUF{dmabuf}", expected="loaded",
                     actual="not loaded", aspect=Aspect.RUNTIME, evidence=ev, remediation=fix)
    elif boot_ev is None:
        yield Result(Status.FAIL, "nvidia-peermem", f"{hcas}; nvidia-peermem is loaded now but "
                     f"{at_boot}: it is gone after a reboot", expected="configured",
                     actual="loaded by hand", aspect=Aspect.DRIFT, evidence=ev,
                     remediation=fix)
    else:
        yield Result(Status.PASS, "nvidia-peermem", f"{hcas}; nvidia-peermem is loaded and "
                     f"{at_boot}", expected="loaded", actual="loaded", aspect=Aspect.RUNTIME,
                     evidence=ev)


# ------------------------------------------------------------------ PCIe links
@record
class Link:
    """Width and speed of one PCIe link end."""

    cur_speed: float | None
    max_speed: float | None
    cur_width: int
    max_width: int


def _link(host: Host, path: str) -> Link | None:
    try:
        return Link(pcisysfs.parse_speed(host.read_text(f"{path}/current_link_speed")),
                    pcisysfs.parse_speed(host.read_text(f"{path}/max_link_speed")),
                    pcisysfs.parse_width(host.read_text(f"{path}/current_link_width")),
                    pcisysfs.parse_width(host.read_text(f"{path}/max_link_width")))
    except HostError:
        return None


def _gts(v: float | None) -> str:
    return "unknown" if v is None else f"{v:g} GT/s"


def run_link(ctx: CheckContext) -> Iterator[Result]:
    """Every GPU, NVSwitch and HCA links at the width and speed both ends support."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield _live_only("pcie links", "the negotiated PCIe link")
        return
    devs = [d for d in pci_devices(host) if d.kind in p["devices"] and not d.virtfn]
    if not devs:
        yield Result(Status.SKIP, "pcie links", f"no {'/'.join(p['devices'])} on the PCI bus",
                     evidence=(Evidence.runtime(PCI),))
        return
    for d in devs:
        subject = f"{d.kind} {d.bdf}"
        try:
            link = _link(host, d.path)
            port = _link(host, d.upstream) if d.upstream else None
        except ParseError as exc:
            yield Result(Status.ERROR, subject, f"unreadable link attributes: {exc}")
            continue
        if link is None:
            yield Result(Status.SKIP, subject, "no PCIe link attributes (not a PCIe device, or "
                         "an integrated function)", evidence=(Evidence.runtime(d.path),))
            continue
        want_w = min(link.max_width, port.max_width) if port and port.max_width else \
            link.max_width
        speeds = [s for s in (link.max_speed, port.max_speed if port else None) if s]
        want_s = min(speeds) if speeds else None
        ev = [Evidence.runtime(f"{PCI}/{d.bdf}/current_link_width", str(link.cur_width)),
              Evidence.runtime(f"{PCI}/{d.bdf}/max_link_width", str(link.max_width)),
              Evidence.runtime(f"{PCI}/{d.bdf}/current_link_speed", _gts(link.cur_speed)),
              Evidence.runtime(f"{PCI}/{d.bdf}/max_link_speed", _gts(link.max_speed))]
        if port is not None and d.upstream:
            up = d.upstream.rsplit("/", 1)[-1]
            ev.append(Evidence.runtime(f"{PCI}/{up}/max_link_width", str(port.max_width)))
            ev.append(Evidence.runtime(f"{PCI}/{up}/max_link_speed", _gts(port.max_speed)))
        expected = f"x{want_w} at {_gts(want_s)}"
        actual = f"x{link.cur_width} at {_gts(link.cur_speed)}"
        data = {"current_width": link.cur_width, "max_width": link.max_width,
                "current_speed": link.cur_speed, "max_speed": link.max_speed,
                "expected_width": want_w, "expected_speed": want_s}
        fix = Remediation("Reseat the device or its riser/cable, check the slot's BIOS "
                          "bifurcation and link-speed settings, and look for AER errors in "
                          "dmesg; a link that trains below its width halves (or worse) "
                          "host-device bandwidth.")
        if link.cur_width == 0:
            yield Result(Status.FAIL, subject, "the PCIe link is down (width 0)",
                         expected=expected, actual=actual, aspect=Aspect.RUNTIME,
                         evidence=tuple(ev), data=data, remediation=fix)
            continue
        problems = []
        if link.cur_width < want_w:
            problems.append(f"width x{link.cur_width} of x{want_w}")
        slow = (want_s is not None and link.cur_speed is not None
                and link.cur_speed < want_s)
        note = ""
        if slow and d.is_nvidia_gpu and not p["gpu_speed_strict"]:
            note = (f"; speed {_gts(link.cur_speed)} below {_gts(want_s)} is normal for an "
                    "idle GPU (it lowers its link speed to save power; check under load)")
        elif slow:
            problems.append(f"speed {_gts(link.cur_speed)} of {_gts(want_s)}")
        if problems:
            yield Result(Status.FAIL, subject, f"the PCIe link runs at {' and '.join(problems)}"
                         + note, expected=expected, actual=actual, aspect=Aspect.RUNTIME,
                         evidence=tuple(ev), data=data, remediation=fix)
        else:
            yield Result(Status.PASS, subject, f"the PCIe link runs at {actual}{note}",
                         expected=expected, actual=actual, aspect=Aspect.RUNTIME,
                         evidence=tuple(ev), data=data)


# ------------------------------------------------------------------ IOMMU
def _kstrtobool(value: str | None) -> bool | None:
    """The kernel's ``kstrtobool``: ``1``/``y``/``on`` true, ``0``/``n``/``off`` false (by
    the first one or two characters), anything else ``None`` (the parameter is ignored)."""
    v = (value or "").lower()
    if v[:1] in ("1", "y"):
        return True
    if v[:1] in ("0", "n"):
        return False
    if v[:2] == "on":
        return True
    if v[:2] == "of":
        return False
    return None


def _iommu_mode(cl: boot.CmdlineSource) -> tuple[str, Param] | None:
    """What the command line makes of the IOMMU for host devices: ``("off", p)`` (the
    IOMMU disabled), ``("pt", p)`` or ``("translated", p)``, ``p`` the deciding word, or
    ``None`` when it says nothing.  As the kernel reads it: ``iommu=`` options are
    comma-separated and matched by prefix (``pt``, ``nopt``, ``off``: x86 ``iommu_setup``),
    ``iommu.passthrough=`` is a kstrtobool, ``intel_iommu=off`` and ``amd_iommu=off``
    disable the IOMMU; between ``pt`` and ``nopt`` the last word on the line wins (each
    sets the default domain type again)."""
    mode: tuple[str, Param] | None = None
    off: Param | None = None
    for prm in cl.params:
        key = prm.key
        if key == "iommu":
            for tok in (prm.value or "").split(","):
                if tok.startswith("off"):
                    off = prm
                if tok.startswith("pt"):
                    mode = ("pt", prm)
                if tok.startswith("nopt"):
                    mode = ("translated", prm)
        elif key == "iommu.passthrough":
            pt = _kstrtobool(prm.value)
            if pt is not None:
                mode = ("pt" if pt else "translated", prm)
        elif key in ("intel_iommu", "amd_iommu"):
            if "off" in (prm.value or "").split(","):
                off = prm
    return ("off", off) if off is not None else mode


def _iommu_boot(host: Host, cl: boot.CmdlineSource | None
                ) -> tuple[bool, str, tuple[Evidence, ...]]:
    """Do host devices get untranslated DMA at the next boot? (ok, how, evidence): from the
    command line, else the kernel's build default (``CONFIG_IOMMU_DEFAULT_PASSTHROUGH``,
    ``drivers/iommu/Kconfig``)."""
    from aiaudit.linux.kernel.config import kernel_config, kernel_config_missing

    decided = _iommu_mode(cl) if cl is not None else None
    if decided is not None:
        mode, prm = decided
        how = {"off": f"{prm} disables the IOMMU", "pt": f"{prm} (passthrough)",
               "translated": f"{prm} (translated DMA)"}[mode]
        return mode != "translated", f"{how} ({cl.where()})", (cl.evidence(prm.name),)
    where = "no kernel command line found" if cl is None else \
        f"no iommu=pt on the kernel command line ({cl.where()})"
    cev = (Evidence.default(f"iommu=pt at boot: {boot.not_found()}"),) if cl is None else \
        (cl.evidence(),)
    kc = kernel_config(host)
    if kc is not None:
        path, text = kc
        for n, line in enumerate(text.splitlines(), 1):
            m = re.fullmatch(r"CONFIG_IOMMU_DEFAULT_(PASSTHROUGH|DMA_LAZY|DMA_STRICT)=y",
                             line.strip())
            if m:
                pt = m.group(1) == "PASSTHROUGH"
                how = (f"{where}; the kernel defaults to passthrough ({path.lstrip('/')}:{n})"
                       if pt else f"{where}; the kernel defaults to translated DMA "
                       f"({path.lstrip('/')}:{n})")
                return pt, how, (*cev, Evidence.file(path, n, line.strip()))
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


def run_iommu(ctx: CheckContext) -> Iterator[Result]:
    """Where the IOMMU is on, GPUs and HCAs are in passthrough (identity) domains."""
    host = ctx.host
    cl = _boot_cmdline(host)
    ok, how, cev = _iommu_boot(host, cl)
    bcfg = boot.load(host)
    fix_summary, snippets = boot.set_params(bcfg, ["iommu=pt"])
    fix = Remediation(f"Use IOMMU passthrough for host devices: {fix_summary}", snippets,
                      **boot.params_step(bcfg))
    if not host.live:
        blocked = gpu_checks.gate(host, ctx.params, "iommu")
        if blocked:
            yield blocked
            return
        if ok:
            yield Result(Status.PASS, "iommu", f"at boot: {how}", expected="iommu=pt",
                         actual="iommu=pt", aspect=Aspect.PERSISTED, evidence=cev)
        else:
            yield Result(Status.FAIL, "iommu", f"at boot: {how}; where the IOMMU is on (AMD by "
                         "default, Intel with intel_iommu=on or CONFIG_INTEL_IOMMU_DEFAULT_ON) "
                         "every GPU and HCA DMA is translated and peer-to-peer traffic may be "
                         "routed through the root complex", expected="iommu=pt",
                         actual="not set", aspect=Aspect.PERSISTED, evidence=cev,
                         remediation=fix)
        return
    units = host.listdir("/sys/class/iommu")
    if not units:
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
        subject = f"{d.kind} {d.bdf}"
        tpath = f"{PCI}/{d.bdf}/iommu_group/type"
        try:
            kind = host.read_text(tpath).strip()
        except HostError:
            yield Result(Status.SKIP, subject, "no iommu_group/type (kernel < 5.11 or no group)")
            continue
        ev = (Evidence.runtime(tpath, kind), *cev)
        if kind == "identity":
            yield Result(Status.PASS, subject, "IOMMU domain is identity (passthrough)",
                         expected="identity", actual=kind, aspect=Aspect.RUNTIME, evidence=ev)
        elif kind == "unmanaged":
            yield Result(Status.SKIP, subject, "the device is assigned to a VM/VFIO "
                         "(unmanaged IOMMU domain)", evidence=ev)
        else:
            yield Result(Status.FAIL, subject, f"IOMMU domain is {kind}: every DMA is "
                         f"translated (IOTLB misses cost RDMA and P2P bandwidth); {how}",
                         expected="identity", actual=kind, aspect=Aspect.RUNTIME, evidence=ev,
                         remediation=fix)


# ------------------------------------------------------------------ ACS
def acs_control(config: bytes) -> int | None:
    """The ACS Control register from a 4096-byte PCIe config space, or ``None`` when the
    function has no ACS capability.  Raises :class:`ParseError` on a malformed chain."""
    if len(config) < 4096:
        raise ParseError("extended configuration space not readable")
    off, seen = 0x100, set()
    while off and off not in seen and 0x100 <= off <= 4092:
        seen.add(off)
        hdr = int.from_bytes(config[off:off + 4], "little")
        if hdr in (0, 0xFFFFFFFF):
            return None
        if hdr & 0xFFFF == ACS_CAP_ID:
            return int.from_bytes(config[off + 6:off + 8], "little")
        off = (hdr >> 20) & 0xFFC
    return None


def run_acs(ctx: CheckContext) -> Iterator[Result]:
    """No bridge between a GPU (or an HCA, for GPUDirect RDMA) and its root port redirects
    peer-to-peer requests."""
    host = ctx.host
    if not host.live:
        yield _live_only("acs", "the ACS setting of PCIe ports")
        return
    by_path = {d.path: d for d in pci_devices(host)}
    gpus = [d for d in by_path.values() if d.is_nvidia_gpu and not d.virtfn]
    hcas = [d for d in by_path.values() if d.is_hca and not d.virtfn]
    if len(gpus) < 2 and not (gpus and hcas):
        yield Result(Status.SKIP, "acs", f"{len(gpus)} NVIDIA GPU(s) and {len(hcas)} HCA(s): "
                     "no PCIe peer-to-peer path between GPUs or GPU and HCA")
        return
    units = host.listdir("/sys/class/iommu")
    for g in gpus + (hcas if gpus else []):
        subject = f"{g.kind} {g.bdf}"
        bad, unread, checked = [], [], []
        up = g.upstream
        while up and up in by_path:
            br = by_path[up]
            try:
                ctl = acs_control(host.read_bytes(f"{PCI}/{br.bdf}/config", cap=4096))
            except (HostError, ParseError):
                unread.append(br.bdf)
                ctl = None
            if ctl is not None:
                checked.append(br.bdf)
                if ctl & (ACS_RR | ACS_CR):
                    bad.append(f"{br.bdf} (ACS control 0x{ctl:04x})")
            up = br.upstream
        ev = tuple(Evidence.runtime(f"{PCI}/{b.split()[0]}/config") for b in bad or unread)
        if bad:
            yield Result(Status.FAIL, subject, f"ACS P2P redirect is on at {', '.join(bad)}: "
                         "GPU peer-to-peer traffic is sent up to the root complex (and "
                         "through the IOMMU" + (")" if units else ", which is off: it may "
                         "hang or be refused)"), expected="P2P redirect off",
                         actual="redirect on", aspect=Aspect.RUNTIME, evidence=ev,
                         remediation=Remediation(
                             "Disable ACS on the PCIe switches in the BIOS (or NVIDIA's "
                             "bare-metal recipe with setpci), or keep the IOMMU on for "
                             "isolation and accept the P2P cost; then confirm with "
                             "`nvidia-smi topo -p2p r`."))
        elif unread:
            yield Result(Status.ERROR, subject, "the extended configuration space of "
                         f"{', '.join(unread)} cannot be read (the kernel shows only 64 bytes "
                         "to readers without CAP_SYS_ADMIN): run the scan as root", evidence=ev)
        else:
            yield Result(Status.PASS, subject, f"no bridge above the {g.kind} redirects P2P "
                         "requests"
                         + (f" (checked {', '.join(checked)})" if checked else
                            " (no ACS capability on the path)"),
                         expected="P2P redirect off", actual="off", aspect=Aspect.RUNTIME)


# ------------------------------------------------------------------ RDMA ports
def run_ports(ctx: CheckContext) -> Iterator[Result]:
    """Every RDMA port is ACTIVE at the expected rate."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield _live_only("rdma ports", "the RDMA port state")
        return
    devs = rdma_devices(host)
    if not devs:
        yield Result(Status.SKIP, "rdma ports", "no RDMA device in /sys/class/infiniband",
                     evidence=(Evidence.runtime(IB),))
        return
    ports = []
    for dev in devs:
        for port in sorted(host.listdir(f"{IB}/{dev}/ports"), key=lambda n: n.zfill(4)):
            base = f"{IB}/{dev}/ports/{port}"
            try:
                layer = (host.try_read_text(f"{base}/link_layer") or "Unknown").strip()
                state = pcisysfs.parse_port_state(host.read_text(f"{base}/state"))
                rate = pcisysfs.parse_rate(host.read_text(f"{base}/rate"))
            except (HostError, ParseError) as exc:
                ports.append((f"{dev}/{port}", base, None, None, None, str(exc)))
                continue
            if layer in p["link_layers"]:
                ports.append((f"{dev}/{port}", base, layer, state, rate, None))
    if not ports:
        yield Result(Status.SKIP, "rdma ports", f"no {'/'.join(p['link_layers'])} RDMA port")
        return
    active = [r for (_, _, _, s, r, _) in ports if s and s[1] == "ACTIVE" and r is not None]
    want = p["min_rate_gbps"] or (max(active) if active else 0)
    basis = ("min_rate_gbps" if p["min_rate_gbps"] else
             "the fastest active port of this node")
    for subject, base, layer, state, rate, err in ports:
        if err is not None or state is None or rate is None:
            yield Result(Status.ERROR, subject, f"port attributes unreadable: {err}")
            continue
        ev = (Evidence.runtime(f"{base}/state", f"{state[0]}: {state[1]}"),
              Evidence.runtime(f"{base}/rate", f"{rate:g} Gb/sec"))
        exp = f"ACTIVE at >= {want:g} Gb/s"
        act = f"{state[1]} at {rate:g} Gb/s"
        if state[1] != "ACTIVE":
            fix = Remediation("Check the cable and switch port (`ibstat`, `ibdiagnet`); an "
                              "INIT port waits for the subnet manager (opensm/UFM).")
            yield Result(Status.FAIL, subject, f"{layer} port is {state[1]}",
                         expected=exp, actual=act, aspect=Aspect.RUNTIME, evidence=ev,
                         remediation=fix)
        elif rate < want:
            yield Result(Status.FAIL, subject, f"{layer} port is ACTIVE at {rate:g} Gb/s, "
                         f"below {want:g} Gb/s ({basis}): a degraded cable or lane",
                         expected=exp, actual=act, aspect=Aspect.RUNTIME, evidence=ev,
                         remediation=Remediation("Replace or reseat the cable/transceiver; "
                                                 "check `mlxlink` for the lanes."))
        else:
            yield Result(Status.PASS, subject, f"{layer} port is ACTIVE at {rate:g} Gb/s",
                         expected=exp, actual=act, aspect=Aspect.RUNTIME, evidence=ev)


# ------------------------------------------------------------------ fabric MTU
def _roce_netdevs(host: Host) -> list[tuple[str, str]]:
    """``(netdev, rdma device)`` for RoCE ports (Ethernet link layer)."""
    out = []
    for dev in rdma_devices(host):
        ports = host.listdir(f"{IB}/{dev}/ports")
        if not any((host.try_read_text(f"{IB}/{dev}/ports/{pt}/link_layer") or "").strip()
                   == "Ethernet" for pt in ports):
            continue
        for nd in host.listdir(f"{IB}/{dev}/device/net"):
            out.append((nd, dev))
    return out


def run_mtu(ctx: CheckContext) -> Iterator[Result]:
    """The training fabric's network interfaces have a large enough MTU."""
    import fnmatch

    host, p = ctx.host, ctx.params
    if not host.live:
        yield _live_only("fabric mtu", "the interface MTU")
        return
    chosen: dict[str, str] = {}
    for nd, dev in _roce_netdevs(host):
        chosen[nd] = f"RoCE netdev of {dev}"
    pats = list(p["interfaces"])
    for nd in host.listdir("/sys/class/net"):
        if any(fnmatch.fnmatchcase(nd, pat) for pat in pats):
            chosen.setdefault(nd, "listed in interfaces")
    if not chosen:
        yield Result(Status.SKIP, "fabric mtu", "no RoCE interface and no interface listed in "
                     "the rule's interfaces")
        return
    for nd in sorted(chosen):
        path = f"/sys/class/net/{nd}/mtu"
        try:
            mtu = int(host.read_text(path).strip())
        except (HostError, ValueError) as exc:
            yield Result(Status.ERROR, nd, f"{path}: {exc}")
            continue
        ev = (Evidence.runtime(path, str(mtu)),)
        want = p["min_mtu"]
        if mtu >= want:
            yield Result(Status.PASS, nd, f"{nd} ({chosen[nd]}) has MTU {mtu}",
                         expected=f">= {want}", actual=str(mtu), aspect=Aspect.RUNTIME,
                         evidence=ev)
        else:
            ib = next((m for m in (4096, 2048, 1024, 512, 256) if mtu - ROCE_OVERHEAD >= m),
                      None)
            extra = f"; RoCE on it uses a {ib}-byte IB MTU" if ib and "RoCE" in chosen[nd] \
                else ""
            yield Result(Status.FAIL, nd, f"{nd} ({chosen[nd]}) has MTU {mtu}{extra}",
                         expected=f">= {want}", actual=str(mtu), aspect=Aspect.RUNTIME,
                         evidence=ev, remediation=Remediation(
                             f"Set MTU {max(want, 9000)} on {nd} in its persistent network "
                             "configuration (netplan `mtu:`, NetworkManager "
                             "`802-3-ethernet.mtu`, ifupdown `mtu`), matching the switch "
                             "ports.", (Snippet.command(f"ip link set dev {nd} mtu "
                                                        f"{max(want, 9000)}",
                                                        "raise it now"),)))


# ------------------------------------------------------------------ IRQ layout
def _running(host: Host, comm: str) -> bool:
    for pid in host.listdir("/proc")[:65536]:
        if pid.isdigit() and (host.try_read_text(f"/proc/{pid}/comm") or "").strip() == comm:
            return True
    return False


def run_irq(ctx: CheckContext) -> Iterator[Result]:
    """irqbalance runs, or the device interrupts are pinned to CPU subsets."""
    from aiaudit.linux.systemd.units import is_enabled, load_unit, unit_evidence

    host = ctx.host
    en = is_enabled(host, IRQBALANCE)
    eev = (Evidence.file(en.evidence),) if en.evidence else ()

    try:
        installed = load_unit(host, IRQBALANCE).exists
    except (HostError, ParseError):
        installed = False
    how = (Snippet.enable(IRQBALANCE, "spread interrupts at every boot") if installed else
           Snippet.command("apt-get install irqbalance  # or: dnf install irqbalance; then "
                           "systemctl enable --now irqbalance", "install and enable it"))
    fix = Remediation("Enable irqbalance, or pin each HCA/GPU interrupt to CPUs of its NUMA "
                      "node (e.g. Mellanox set_irq_affinity_bynode.sh) at boot.", (how,))
    if not host.live:
        from aiaudit.linux.rootkind import NOT_BOOTED, boots

        if not boots(host):
            yield Result(Status.SKIP, "irq layout", NOT_BOOTED)
            return
        if en.enabled:
            yield Result(Status.PASS, "irq layout", f"{IRQBALANCE}: {en.reason}",
                         expected="irqbalance or pinned", actual="irqbalance enabled",
                         aspect=Aspect.PERSISTED, evidence=eev)
        else:
            yield Result(Status.FAIL, "irq layout", f"{IRQBALANCE}: {en.reason}; a pinned "
                         "IRQ layout is recognised only in a live scan", aspect=Aspect.PERSISTED,
                         expected="irqbalance or pinned", actual="neither",
                         evidence=(unit_evidence(host, IRQBALANCE, en),), remediation=fix)
        return
    if _running(host, "irqbalance"):
        yield Result(Status.PASS, "irq layout", f"irqbalance is running ({en.reason})",
                     expected="irqbalance or pinned", actual="irqbalance running",
                     aspect=Aspect.RUNTIME, evidence=eev)
        return
    try:
        online = set(parse_cpulist(host.read_text("/sys/devices/system/cpu/online")))
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, "irq layout", f"online CPUs unknown: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    irqs: list[str] = []
    for d in pci_devices(host):
        if d.kind in ("GPU", "HCA"):
            irqs += host.listdir(f"{PCI}/{d.bdf}/msi_irqs")
    if not irqs:
        yield Result(Status.SKIP, "irq layout", "irqbalance is not running and no GPU/HCA "
                     "has MSI interrupts to judge")
        return
    spread = []
    for irq in sorted(set(irqs), key=lambda s: s.zfill(8)):
        try:
            cpus = set(parse_cpulist(host.read_text(f"/proc/irq/{irq}/smp_affinity_list")))
        except (HostError, ParseError):
            continue
        if len(online) > 1 and cpus >= online:
            spread.append(irq)
    if spread:
        yield Result(Status.FAIL, "irq layout", f"irqbalance is not running and {len(spread)} "
                     f"of {len(set(irqs))} GPU/HCA interrupts may run on any CPU (IRQ "
                     f"{', '.join(spread[:8])}): they land on CPU 0's node by default",
                     expected="irqbalance or pinned", actual="unpinned",
                     aspect=Aspect.RUNTIME, evidence=(Evidence.runtime(
                         f"/proc/irq/{spread[0]}/smp_affinity_list"),), remediation=fix)
    else:
        yield Result(Status.PASS, "irq layout", f"irqbalance is not running, and all "
                     f"{len(set(irqs))} GPU/HCA interrupts are pinned to CPU subsets",
                     expected="irqbalance or pinned", actual="pinned", aspect=Aspect.RUNTIME)


# ------------------------------------------------------------------ nvidia-smi -q -x
SMI_ARGV = ("nvidia-smi", "-q", "-x")
SW_REASONS = ("applications_clocks_setting", "sw_power_cap", "sw_thermal_slowdown",
              "hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
              "display_clocks_setting")


def smi_query(host: Host, timeout: float) -> list[nvsmi.GpuHealth] | Result:
    """``nvidia-smi -q -x`` parsed (once per run), or an error result."""

    def load() -> list[nvsmi.GpuHealth] | Result:
        shown = " ".join(SMI_ARGV)
        try:
            res = host.run(list(SMI_ARGV), timeout=timeout)
        except (CommandError, LiveStateUnavailable) as exc:
            return Result(Status.ERROR, "nvidia-smi", f"nvidia-smi -q -x failed: {exc}",
                          evidence=(Evidence.command(shown),))
        if res.returncode != 0:
            first = (res.stdout.strip() or res.stderr.strip()).splitlines()[:1]
            return Result(Status.ERROR, "nvidia-smi", f"nvidia-smi exited {res.returncode}: "
                          f"{first[0] if first else 'no output'}",
                          evidence=(Evidence.command(shown),))
        try:
            return nvsmi.parse(res.stdout)
        except ParseError as exc:
            return Result(Status.ERROR, "nvidia-smi", f"unexpected nvidia-smi output: {exc}",
                          evidence=(Evidence.command(shown),))

    return host.memo(("nvidia-smi-q-x", timeout), load)


def judge_gpu(g: nvsmi.GpuHealth, prop: str, reasons: tuple[str, ...]
              ) -> tuple[Status, str, str, str]:
    """(status, message, expected, actual) of one GPU for property ``prop``."""
    if prop == "ecc":
        cur, pend = g.ecc_current, g.ecc_pending
        if cur in (None, "N/A"):
            return Status.SKIP, "the GPU has no ECC (N/A)", "Enabled", "N/A"
        if cur == "Enabled" and pend == "Disabled":
            return (Status.FAIL, "ECC is on now but pending Disabled: it turns off at the "
                    "next GPU reset", "Enabled", "Enabled, pending Disabled")
        if cur == "Enabled":
            return Status.PASS, "ECC is enabled", "Enabled", "Enabled"
        note = " (pending Enabled: reset the GPU to apply)" if pend == "Enabled" else ""
        return (Status.FAIL, f"ECC is {cur}{note}: memory errors corrupt training silently",
                "Enabled", cur)
    if prop == "memory_errors":
        bad = []
        if g.pages_pending_blacklist == "Yes" or g.pages_pending_retirement == "Yes":
            bad.append("retired pages pending (reset the GPU to retire them)")
        if g.rows_pending == "Yes":
            bad.append("row remapping pending (reset the GPU)")
        if g.rows_failure == "Yes":
            bad.append("a row remapping failed (RMA the GPU)")
        if bad:
            return Status.FAIL, "; ".join(bad), "nothing pending", "; ".join(bad)
        return (Status.PASS, "no pending page retirement or row remapping and no remapping "
                "failure", "nothing pending", "nothing pending")
    active = [r for r, on in g.reasons if on and r in reasons]
    limit = ""
    if "sw_power_cap" in reasons and g.power_limit_w and g.default_power_limit_w and \
            g.power_limit_w < g.default_power_limit_w:
        limit = (f"power limit {g.power_limit_w:g} W is below the default "
                 f"{g.default_power_limit_w:g} W")
    if not g.reasons:
        return Status.SKIP, "nvidia-smi reports no clock event reasons", "none", "unknown"
    if active or limit:
        what = ", ".join(active + ([limit] if limit else []))
        return Status.FAIL, f"clocks held down: {what}", "none active", what
    return Status.PASS, "no clock slowdown reason active", "none active", "none"


def run_smi(ctx: CheckContext) -> Iterator[Result]:
    """One result per GPU from ``nvidia-smi -q -x`` (live real root only)."""
    host, p = ctx.host, ctx.params
    blocked = gpu_checks.gate(host, p, "gpu health")
    if blocked:
        yield blocked
        return
    if not host.allow_commands:
        yield Result(Status.SKIP, "nvidia-smi", "nvidia-smi is run only when scanning the real "
                     "/ live; it is never run from a scanned root")
        return
    got = smi_query(host, float(p["timeout"]))
    if isinstance(got, Result):
        yield got
        return
    if not got:
        yield Result(Status.ERROR, "nvidia-smi", "nvidia-smi -q -x listed no GPU")
        return
    fixes = {"ecc": Remediation("Enable ECC and reset the GPUs (or reboot).", (
        Snippet.command("nvidia-smi -e 1 && nvidia-smi -r", "enable ECC, then reset"),)),
        "memory_errors": Remediation("Drain the node, reset the GPU (`nvidia-smi -r -i N` or "
                                     "reboot); a remapping failure or repeated retirements "
                                     "mean the GPU must be replaced."),
        "throttle": Remediation("Reset application clocks and the power limit to defaults "
                                "(`nvidia-smi -rac`, `nvidia-smi -pl <default>`); for thermal "
                                "or power-brake slowdowns check cooling and PSUs.")}
    for g in got:
        status, msg, exp, act = judge_gpu(g, p["property"], tuple(p["reasons"]))
        yield Result(status, f"GPU {g.bus_id}", f"{g.name}: {msg}", expected=exp, actual=act,
                     aspect=Aspect.RUNTIME, evidence=(Evidence.command(" ".join(SMI_ARGV)),),
                     remediation=fixes[p["property"]] if status is Status.FAIL else None)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the GPU node readiness checks."""
    return [
        CheckSpec(id="gpu.nouveau", title="nouveau cannot bind the NVIDIA GPUs",
                  run=run_nouveau, params_schema=_schema({}),
                  description="Live: /sys/module/nouveau absent. At boot: modprobe.d "
                              "(kmod's directories, first basename wins) has 'blacklist "
                              "nouveau', an install to /bin/false or 'options nouveau "
                              "modeset=0', or the kernel command line has "
                              "modprobe.blacklist=nouveau / nouveau.modeset=0."),
        CheckSpec(id="gpu.uvm", title="The nvidia-uvm module is available",
                  run=run_uvm, params_schema=_schema({}),
                  description="Live: /sys/module/nvidia_uvm exists. Offline: nvidia-uvm.ko* "
                              "sits beside the nvidia.ko found for the newest kernel."),
        CheckSpec(id="gpu.fabricmanager", title="NVSwitch systems run a matching Fabric Manager",
                  run=run_fabricmanager, params_schema={"type": "object",
                                                        "additionalProperties": False},
                  description="NVSwitches: NVIDIA PCI functions of class 0x0680 (live). Then "
                              "the nvidia-fabricmanager package's upstream version equals the "
                              "driver version and nvidia-fabricmanager.service is enabled."),
        CheckSpec(id="gpu.peermem", title="GPUDirect RDMA module is loaded where HCAs exist",
                  run=run_peermem, params_schema=_schema({}),
                  description="With RDMA devices in /sys/class/infiniband: "
                              "/sys/module/nvidia_peermem exists and modules-load.d, "
                              "/etc/modules or a modprobe.d softdep loads it at boot."),
        CheckSpec(id="pci.link", title="PCIe links train at full width and speed",
                  run=run_link, modes=("live",),
                  params_schema={"type": "object", "additionalProperties": False,
                                 "properties": {
                                     "devices": {"type": "array", "uniqueItems": True,
                                                 "items": {"enum": ["GPU", "NVSwitch", "HCA"]},
                                                 "default": ["GPU", "NVSwitch", "HCA"]},
                                     "gpu_speed_strict": {
                                         "type": "boolean", "default": False,
                                         "description": "fail an idle GPU's lowered link "
                                                        "speed too (it downtrains to save "
                                                        "power)"}}},
                  description="current_link_width/speed against the lower of the device's "
                              "and its upstream port's max_link_width/speed."),
        CheckSpec(id="iommu.passthrough", title="GPU and HCA DMA bypasses IOMMU translation",
                  run=run_iommu, params_schema=_schema({}),
                  description="Live: /sys/class/iommu empty (off) or the devices' "
                              "iommu_group/type is identity. Offline: iommu=pt (or "
                              "iommu.passthrough=1, or the IOMMU off) on the booted command "
                              "line."),
        CheckSpec(id="pci.acs", title="PCIe switches do not redirect GPU peer-to-peer traffic",
                  run=run_acs, modes=("live",),
                  params_schema={"type": "object", "additionalProperties": False},
                  description="For each bridge between a GPU (or, with GPUs, an HCA) and its "
                              "root port: the ACS "
                              "Control register (extended config space, readable as root) has "
                              "P2P Request/Completion Redirect off."),
        CheckSpec(id="rdma.ports", title="RDMA ports are ACTIVE at the expected rate",
                  run=run_ports, modes=("live",),
                  params_schema={"type": "object", "additionalProperties": False,
                                 "properties": {
                                     "min_rate_gbps": {"type": "number", "minimum": 0,
                                                       "default": 0,
                                                       "description": "0: the fastest active "
                                                                      "port of the node"},
                                     "link_layers": {"type": "array", "uniqueItems": True,
                                                     "items": {"enum": ["InfiniBand",
                                                                        "Ethernet"]},
                                                     "default": ["InfiniBand", "Ethernet"]}}},
                  description="/sys/class/infiniband/*/ports/*/state ACTIVE and rate >= "
                              "min_rate_gbps (default: the node's fastest active port)."),
        CheckSpec(id="network.fabric_mtu", title="Training fabric interfaces use a large MTU",
                  run=run_mtu, modes=("live",),
                  params_schema={"type": "object", "additionalProperties": False,
                                 "properties": {
                                     "min_mtu": {"type": "integer", "minimum": 68,
                                                 "default": 4200},
                                     "interfaces": {"type": "array",
                                                    "items": {"type": "string"},
                                                    "default": [],
                                                    "description": "globs of fabric netdevs "
                                                                   "besides RoCE ones"}}},
                  description="RoCE netdevs (/sys/class/infiniband/*/device/net/*) and "
                              "interfaces matching the globs: /sys/class/net/<if>/mtu >= "
                              "min_mtu."),
        CheckSpec(id="irq.balance", title="Device interrupts are balanced or pinned",
                  run=run_irq, params_schema={"type": "object", "additionalProperties": False},
                  description="irqbalance enabled (offline) or running (live); otherwise, "
                              "live, every GPU/HCA MSI IRQ's smp_affinity_list is a proper "
                              "subset of the online CPUs."),
        CheckSpec(id="gpu.smi_health", title="nvidia-smi reports a healthy GPU",
                  run=run_smi, modes=("live",),
                  params_schema=_schema({
                      "property": {"enum": ["ecc", "memory_errors", "throttle"]},
                      "reasons": {"type": "array", "items": {"type": "string"},
                                  "default": list(SW_REASONS)},
                      "timeout": {"type": "number", "minimum": 1, "maximum": 60,
                                  "default": 15}}) | {"required": ["property"]},
                  description="Live on the real / only: nvidia-smi -q -x (timeout), parsed as "
                              "XML; ecc: current_ecc Enabled and not pending Disabled; "
                              "memory_errors: no pending retirement / row remapping and no "
                              "remapping failure; throttle: no listed clock event reason "
                              "active and the power limit not below the default."),
    ]
