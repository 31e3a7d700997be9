"""Hardware facts of a running node (or a ``--live`` snapshot): read from /proc and /sys.

Sources: ``/proc/driver/nvidia/gpus/<BDF>/information`` (``Model:``, ``Video BIOS:``;
kernel-open/nvidia/nv-procfs.c), ``/sys/bus/pci/devices/<BDF>/{current_link_width,
max_link_speed}`` (Documentation/ABI/testing/sysfs-bus-pci), amdgpu's
``device/vbios_version`` (drivers/gpu/drm/amd/amdgpu/amdgpu_atombios.c),
``/sys/class/infiniband/<hca>/{fw_ver,ports/<n>/rate}``
(Documentation/ABI/stable/sysfs-class-infiniband), ``/sys/class/nvme``, ``/proc/meminfo``,
``/proc/cpuinfo``, ``/sys/devices/system/node/node<N>``, ``/sys/class/dmi/id``
(Documentation/ABI/testing/sysfs-firmware-dmi-tables... ``bios_version``, ``product_name``).

A GPU's PCIe *generation* is what its link can train to: the lower of the device's and its
upstream port's ``max_link_speed``.  The current speed is not used: GPUs drop their link to
2.5 GT/s when idle (ASPM/link speed management), so it would differ between two identical
idle and busy nodes.  The width does not change at idle: ``current_link_width`` below the
class's is the classic "GPU at x8" fault.
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.inventory.model import Fact, Scalar, fact
from aiaudit.linux.pci import devices, sysfs

GEN_OF_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
"""PCIe generation of each transfer rate (GT/s)."""
MAX_DEVICES = 512
"""Most devices of one kind (HCAs, NVMe controllers, NUMA nodes) examined."""


def text(host: Host, path: str) -> str | None:
    """The stripped content of a small file; ``None`` if absent or unreadable."""
    try:
        value = host.try_read_text(path)
    except HostError:
        return None
    return value.strip() if value is not None else None


def _info_field(info: str | None, key: str) -> str | None:
    for line in (info or "").splitlines():
        k, sep, v = line.partition(":")
        if sep and k.strip() == key:
            return v.strip() or None
    return None


def _gen(host: Host, dev: devices.PciDev) -> int | None:
    speeds: list[float] = []
    for base in (dev.path, dev.upstream):
        raw = text(host, f"{base}/max_link_speed") if base else None
        try:
            speed = sysfs.parse_speed(raw) if raw else None
        except ParseError:
            speed = None
        if speed is not None:
            speeds.append(speed)
    return GEN_OF_SPEED.get(min(speeds)) if speeds else None


def _width(host: Host, dev: devices.PciDev) -> int | None:
    raw = text(host, f"{dev.path}/current_link_width")
    try:
        return sysfs.parse_width(raw) if raw else None
    except ParseError:
        return None


def gpu_facts(host: Host) -> list[Fact]:
    """NVIDIA and AMD GPUs: count, model, VBIOS, PCIe width and generation."""
    gpus = [d for d in devices.pci_devices(host) if d.is_gpu and not d.virtfn]
    out: list[Fact] = []
    nv = [d for d in gpus if d.is_nvidia_gpu]
    if nv or host.is_dir("/proc/driver/nvidia/gpus"):
        out += _nvidia(host)
    width = {d.bdf: w for d in gpus if (w := _width(host, d)) is not None}
    if width:
        out.append(fact("gpu.pcie.width", width,
                        "/sys/bus/pci/devices/<BDF>/current_link_width"))
    gen = {d.bdf: g for d in gpus if (g := _gen(host, d)) is not None}
    if gen:
        out.append(fact("gpu.pcie.gen", gen,
                        "/sys/bus/pci/devices/<BDF>/max_link_speed and its port's"))
    return out


def _nvidia(host: Host) -> list[Fact]:
    base = "/proc/driver/nvidia/gpus"
    seen = [b for b in host.listdir(base) if devices.is_bdf(b)][:MAX_DEVICES]
    out = [fact("gpu.nvidia.count", len(seen), base)]
    models: dict[str, Scalar] = {}
    vbios: dict[str, Scalar] = {}
    for bdf in seen:
        info = text(host, f"{base}/{bdf}/information")
        if m := _info_field(info, "Model"):
            models[bdf.lower()] = m
        if v := _info_field(info, "Video BIOS"):
            vbios[bdf.lower()] = v
    if models:
        out.append(fact("gpu.nvidia.model", models,
                        f"{base}/<BDF>/information (Model)"))
    if vbios:
        out.append(fact("gpu.nvidia.vbios", vbios,
                        f"{base}/<BDF>/information (Video BIOS)"))
    return out


def hca_facts(host: Host) -> list[Fact]:
    """RDMA adapters (InfiniBand and RoCE): count, each port's rate, firmware."""
    base = "/sys/class/infiniband"
    names = host.listdir(base)[:MAX_DEVICES]
    if not names:
        return []
    rates: dict[str, Scalar] = {}
    firmware: dict[str, Scalar] = {}
    for name in names:
        if fw := text(host, f"{base}/{name}/fw_ver"):
            firmware[name] = fw
        for port in host.listdir(f"{base}/{name}/ports")[:64]:
            if rate := text(host, f"{base}/{name}/ports/{port}/rate"):
                rates[f"{name}/{port}"] = rate
    out = [fact("hca.count", len(names), base)]
    if rates:
        out.append(fact("hca.port_rate", rates,
                        f"{base}/<hca>/ports/<n>/rate"))
    if firmware:
        out.append(fact("hca.firmware", firmware,
                        f"{base}/<hca>/fw_ver"))
    return out


def _meminfo(host: Host) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (text(host, "/proc/meminfo") or "").splitlines():
        key, sep, rest = line.partition(":")
        words = rest.split()
        # at most 20 digits: a hostile /proc/meminfo's 5,000-digit number is no fact
        if sep and words and words[0].isdigit() and len(words[0]) <= 20:
            out[key.strip()] = int(words[0])
    return out


def _cpuinfo(host: Host) -> tuple[str | None, int, int]:
    """(first ``model name``, distinct ``physical id`` count, ``processor`` count)."""
    model = None
    sockets: set[str] = set()
    cpus = 0
    for line in (text(host, "/proc/cpuinfo") or "").splitlines():
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not sep:
            continue
        if key == "processor":
            cpus += 1
        elif key == "physical id":
            sockets.add(value)
        elif key == "model name" and model is None:
            model = " ".join(value.split())
    return model, len(sockets), cpus


def platform_facts(host: Host) -> list[Fact]:
    """Memory, huge pages, CPU, NUMA, NVMe, BIOS and system model."""
    out: list[Fact] = []
    mem = _meminfo(host)
    if "MemTotal" in mem:
        out.append(fact("memory.total_gib", round(mem["MemTotal"] / 1048576, 1),
                        "/proc/meminfo (MemTotal)"))
    if "HugePages_Total" in mem:
        out.append(fact("memory.hugepages", mem["HugePages_Total"],
                        "/proc/meminfo (HugePages_Total)"))
    model, sockets, cpus = _cpuinfo(host)
    if model:
        out.append(fact("cpu.model", model, "/proc/cpuinfo (model name)"))
    if sockets:
        out.append(fact("cpu.sockets", sockets, "/proc/cpuinfo (physical id)"))
    if cpus:
        out.append(fact("cpu.logical", cpus,
                        "/proc/cpuinfo (processor)"))
    nodes = [n for n in host.listdir("/sys/devices/system/node")
             if n.startswith("node") and n[4:].isdigit()][:MAX_DEVICES]
    if nodes:
        out.append(fact("numa.nodes", len(nodes),
                        "/sys/devices/system/node/node<N>"))
    if host.is_dir("/sys/class/nvme"):
        nvme = host.listdir("/sys/class/nvme")[:MAX_DEVICES]
        out.append(fact("nvme.count", len(nvme), "/sys/class/nvme"))
    for name in ("bios_version", "product_name"):
        if value := text(host, f"/sys/class/dmi/id/{name}"):
            out.append(fact(f"dmi.{name}", value, f"/sys/class/dmi/id/{name}"))
    return out
