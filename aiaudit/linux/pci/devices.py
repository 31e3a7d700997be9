"""The PCI functions of a live host: vendor, class, where each sits in the hierarchy.

Sources: Documentation/ABI/testing/sysfs-bus-pci (``vendor``, ``class``, ``physfn``);
``/sys/bus/pci/devices/<BDF>`` links to ``/sys/devices/pci<dom>:<bus>/<port>/.../<BDF>``
and the directory above a device is its upstream bridge (drivers/base/core.c names device
directories after their parents), which is how the upstream port is found.  NVSwitches are
NVIDIA (0x10de) functions of class 0x0680 ("other bridge"), as ``lspci`` lists them on
HGX/DGX baseboards.  AMD GPUs are the AMD/ATI (0x1002) functions the amdgpu driver binds by
class (drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c ``pciidlist``: ``PCI_CLASS_DISPLAY_VGA``,
``PCI_CLASS_DISPLAY_OTHER`` and ``PCI_CLASS_ACCELERATOR_PROCESSING``, each ``<< 8`` with
``class_mask = 0xffffff``): 0x030000 (Radeon, APUs), 0x038000 (Instinct MI100/MI200) and
0x120000 (Instinct MI300 and later, "Processing accelerators" in ``lspci``).
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.pci import sysfs

PCI = "/sys/bus/pci/devices"
"""Where every PCI function is listed (a link per function)."""
NVIDIA = 0x10DE
AMD = 0x1002
"""AMD/ATI, the vendor id of Radeon and Instinct GPUs (0x1022 is AMD's CPU-side vendor id)."""
MELLANOX = 0x15B3
MAX_PCI = 4096
"""Most PCI functions examined (large hosts have ~1000)."""
PCI_CLASS_INFINIBAND = 0x0207
"""Class/subclass of InfiniBand controllers."""
AMDGPU_CLASSES = (0x030000, 0x038000, 0x120000)
"""The 24-bit classes amdgpu binds any AMD function of (VGA, display "other", processing
accelerator; programming interface 0)."""


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
        return self.vendor == NVIDIA and self.klass >> 16 == sysfs.PCI_CLASS_DISPLAY

    @property
    def is_amd_gpu(self) -> bool:
        """An AMD function of a class the amdgpu driver binds (Radeon, Instinct, APU)."""
        return self.vendor == AMD and self.klass in AMDGPU_CLASSES

    @property
    def is_gpu(self) -> bool:
        """A GPU of either vendor (NVIDIA display/3D controller or AMD amdgpu class)."""
        return self.is_nvidia_gpu or self.is_amd_gpu

    @property
    def is_nvswitch(self) -> bool:
        """An NVIDIA "other bridge": an NVSwitch."""
        return self.vendor == NVIDIA and self.klass >> 8 == sysfs.PCI_CLASS_BRIDGE_OTHER

    @property
    def is_hca(self) -> bool:
        """An InfiniBand controller, or a Mellanox/NVIDIA network adapter (RoCE)."""
        if self.klass >> 8 == PCI_CLASS_INFINIBAND:
            return True
        return self.vendor == MELLANOX and self.klass >> 16 == sysfs.PCI_CLASS_NETWORK

    @property
    def kind(self) -> str:
        """``GPU`` (NVIDIA or AMD), ``NVSwitch``, ``HCA`` or ``device``."""
        if self.is_gpu:
            return "GPU"
        if self.is_nvswitch:
            return "NVSwitch"
        return "HCA" if self.is_hca else "device"


def is_bdf(name: str) -> bool:
    """``0000:01:00.0``-shaped (domain, bus, device.function): a PCI device directory."""
    parts = name.split(":")
    return len(parts) == 3 and "." in parts[2] and len(parts[0]) == 4


def pci_devices(host: Host) -> list[PciDev]:
    """Every PCI function (live only; ``[]`` offline), read once per run; a function whose
    ``vendor`` or ``class`` cannot be read is left out."""

    def load() -> list[PciDev]:
        if not host.live:
            return []
        out: list[PciDev] = []
        for bdf in sorted(host.listdir(PCI))[:MAX_PCI]:
            base = f"{PCI}/{bdf}"
            try:
                vendor = sysfs.parse_hex(host.read_text(f"{base}/vendor"), 16)
                klass = sysfs.parse_hex(host.read_text(f"{base}/class"), 24)
                real = host.resolve(base)
            except (HostError, ParseError):
                continue
            parent = real.rsplit("/", 1)[0]
            up = parent if is_bdf(parent.rsplit("/", 1)[-1]) else None
            out.append(PciDev(bdf, vendor, klass, real, up,
                              host.lstat_exists(f"{base}/physfn")))
        return out

    return host.memo(("pci-devices",), load)
