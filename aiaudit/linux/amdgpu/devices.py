"""AMD GPUs of a live host: the PCI functions amdgpu binds (sysfs) and the GPUs the ROCm
kernel driver (KFD) has initialised (its topology).

Sources: Documentation/ABI/testing/sysfs-bus-pci (``vendor``, ``device``, ``class``,
``driver``); drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c (the classes amdgpu binds, see
:data:`aiaudit.linux.pci.devices.AMDGPU_CLASSES`); DRM minors under ``<device>/drm/``
(``card<N>``, ``renderD<128+N>``, drivers/gpu/drm/drm_sysfs.c); the KFD topology
``/sys/class/kfd/kfd/topology/nodes/<n>/properties`` (drivers/gpu/drm/amd/amdkfd/
kfd_topology.c ``node_show``: one ``name value`` pair a line; a GPU node has a non-zero
``simd_count`` and ``gpu_id``, its PCI address is ``domain`` and ``location_id`` =
``bus << 8 | devfn``).  With compute partitioning (MI300 CPX, DPX...) one PCI device
appears as several KFD nodes whose ``location_id`` differ in the function bits.
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.pci import sysfs
from aiaudit.linux.pci.devices import PCI, PciDev, pci_devices

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
"""One directory per KFD topology node (CPUs and GPUs)."""
MAX_NODES = 512
"""Most KFD nodes read (an MI300X node in CPX mode has 64 GPU nodes)."""
DATACENTER_CLASSES = (0x038000, 0x120000)
"""AMD GPU classes only Instinct accelerators use ("display controller" MI100/MI200,
"processing accelerator" MI300 and later); Radeon cards and APUs are VGA controllers."""


@record
class AmdGpu:
    """One AMD GPU PCI function."""

    dev: PciDev
    device: int
    """PCI device id (``0x74a1``)."""
    name: str
    """Product name: the Instinct table's, else ``AMD GPU 0x<device>``."""
    datacenter: bool
    """An Instinct (data center) GPU: a data-center class or a device id of the table."""
    driver: str | None
    """The bound driver (``amdgpu``, ``vfio-pci``...), ``None`` when unbound."""
    drm: tuple[str, ...] = ()
    """DRM minors of the function (``card0``, ``renderD128``)."""

    @property
    def bdf(self) -> str:
        """The PCI address."""
        return self.dev.bdf

    @property
    def sysfs(self) -> str:
        """``/sys/bus/pci/devices/<bdf>``."""
        return f"{PCI}/{self.dev.bdf}"

    @property
    def label(self) -> str:
        """``GPU 0000:05:00.0 (Instinct MI300X)``: the subject of per-GPU results."""
        return f"GPU {self.bdf} ({self.name})"


def amd_gpus(host: Host) -> list[AmdGpu]:
    """The AMD GPU functions on the PCI bus (live only, ``[]`` offline; virtual functions
    included, flagged by :attr:`PciDev.virtfn`), read once per run."""

    def load() -> list[AmdGpu]:
        found = [d for d in pci_devices(host) if d.is_amd_gpu]
        if not found:
            return []
        from aiaudit.linux.amdgpu.table import table  # only where there is an AMD GPU

        names = table().instinct
        out: list[AmdGpu] = []
        for d in found:
            base = f"{PCI}/{d.bdf}"
            try:
                device = sysfs.parse_hex(host.read_text(f"{base}/device"), 16)
            except (HostError, ParseError):
                device = 0
            link = host.readlink(f"{base}/driver")
            drv = link.rstrip("/").rsplit("/", 1)[-1] if link else None
            drm = tuple(sorted(n for n in host.listdir(f"{base}/drm")
                               if n.startswith(("card", "renderD"))))
            dc = d.klass in DATACENTER_CLASSES or device in names
            out.append(AmdGpu(d, device, names.get(device, f"AMD GPU 0x{device:04x}"), dc,
                              drv, drm))
        return out

    return host.memo(("amdgpu-gpus",), load)


# ------------------------------------------------------------------ KFD topology
@record
class KfdNode:
    """A GPU node of the KFD topology."""

    node: str
    """The node directory name (``2``)."""
    bdf: str
    """PCI address from ``domain`` and ``location_id``."""
    device_id: int
    gfx_target_version: int
    """``90402`` for gfx942 (MI300), ``90010`` for gfx90a (MI200)..."""
    drm_render_minor: int | None
    unique_id: str | None = None

    @property
    def gfx(self) -> str:
        """``gfx942`` from ``gfx_target_version`` 90402 (major, minor, stepping; the
        stepping in hex as LLVM spells targets: 90010 is gfx90a)."""
        v = self.gfx_target_version
        return f"gfx{v // 10000}{(v // 100) % 100:x}{v % 100:x}"

    @property
    def physical(self) -> str:
        """The PCI device (``0000:05:00``) without the function, which partitions share."""
        return self.bdf.rsplit(".", 1)[0]


def parse_properties(text: str) -> dict[str, int]:
    """A KFD ``properties`` file (``name value`` lines, values decimal) as a dict; a line
    of another shape is a :class:`ParseError`."""
    out: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != 2 or not parts[1].lstrip("-").isdigit() or len(parts[1]) > 24:
            raise ParseError(f"line {n}: not 'name value': {raw[:60]!r}", line=n)
        out[parts[0]] = int(parts[1])
    return out


def location_bdf(domain: int, location_id: int) -> str:
    """``0000:05:00.0`` from KFD's ``domain`` and ``location_id`` (bus << 8 | devfn)."""
    return (f"{domain:04x}:{(location_id >> 8) & 0xFF:02x}:{(location_id >> 3) & 0x1F:02x}."
            f"{location_id & 7:x}")


@record
class Kfd:
    """What the KFD topology shows: its GPU nodes, and the nodes it could not read."""

    present: bool
    """``/sys/class/kfd/kfd/topology/nodes`` exists (amdgpu with KFD loaded)."""
    gpus: tuple[KfdNode, ...] = ()
    problems: tuple[str, ...] = ()


def kfd_topology(host: Host) -> Kfd:
    """The KFD GPU nodes (live only), read once per run."""

    def load() -> Kfd:
        if not host.live or not host.is_dir(KFD_NODES):
            return Kfd(False)
        gpus: list[KfdNode] = []
        problems: list[str] = []
        names = sorted(host.listdir(KFD_NODES), key=lambda n: (len(n), n))[:MAX_NODES]
        for n in names:
            path = f"{KFD_NODES}/{n}/properties"
            try:
                p = parse_properties(host.read_text(path, cap=64 * 1024))
            except (HostError, ParseError) as exc:
                problems.append(f"{path}: {exc}")
                continue
            if p.get("simd_count", 0) <= 0:
                continue  # a CPU node
            minor = p.get("drm_render_minor")
            gpus.append(KfdNode(n, location_bdf(p.get("domain", 0), p.get("location_id", 0)),
                                p.get("device_id", 0), p.get("gfx_target_version", 0),
                                minor if minor and minor > 0 else None,
                                str(p["unique_id"]) if p.get("unique_id") else None))
        return Kfd(True, tuple(gpus), tuple(problems))

    return host.memo(("amdgpu-kfd",), load)
