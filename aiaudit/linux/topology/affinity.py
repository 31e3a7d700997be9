"""Each GPU's NUMA node and its nearest RDMA NIC, from the PCI tree in sysfs (no
``nvidia-smi topo``).

Sources: ``/sys/bus/pci/devices/<bdf>`` links into ``/sys/devices/pci<dom>:<bus>/<port>/
.../<bdf>``, one directory per PCI function below its upstream bridge (drivers/base/core.c);
``numa_node`` (Documentation/ABI/testing/sysfs-bus-pci, ``-1`` without NUMA information);
``/sys/class/infiniband/<dev>/device`` links to the NIC's PCI function
(Documentation/ABI/stable/sysfs-class-infiniband); ``current_link_width`` and
``max_link_width`` of each bridge.

The distance between two functions is named as ``nvidia-smi topo -m`` names it (NVML's
``nvmlDeviceGetTopologyCommonAncestor`` levels, from near to far):

- ``PIX``: below one PCIe switch (at most one bridge level between each device and the
  switch they share);
- ``PXB``: below a common switch, through more than one bridge level on a side;
- ``PHB``: the only common ancestor is the host bridge (root complex) of their domain;
- ``NODE``: different root complexes of the same NUMA node;
- ``SYS``: different NUMA nodes (the CPUs' interconnect).
"""

from __future__ import annotations

from typing import Mapping

from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.pci import sysfs
from aiaudit.linux.pci.devices import PciDev, is_bdf, pci_devices

IB = "/sys/class/infiniband"
LEVELS = ("PIX", "PXB", "PHB", "NODE", "SYS")
"""Distances, nearest first."""


@record
class Nic:
    """An RDMA device and where its PCI function sits."""

    name: str
    path: str
    numa: int | None


@record
class Link:
    """A bridge on a GPU's path to its root port whose link runs narrower than it can."""

    bdf: str
    width: int
    max_width: int


@record
class GpuPlace:
    """One GPU: its NUMA node, nearest NICs and degraded links above it."""

    bdf: str
    path: str
    numa: int | None
    nearest: tuple[str, ...]
    """The NICs at the nearest level (several on a shared switch)."""
    level: str | None
    """Level of :attr:`nearest` (``None``: no NIC)."""
    levels: tuple[tuple[str, str], ...]
    """``(nic, level)`` for every NIC."""
    degraded: tuple[Link, ...] = ()


def _chain(path: str) -> list[str]:
    """The components of a resolved ``/sys/devices`` path from the host bridge down."""
    parts = path.split("/")
    return parts[3:] if path.startswith("/sys/devices/") else parts


def numa_node(host: Host, path: str) -> int | None:
    """The function's NUMA node (``None``: unknown, ``-1`` in sysfs)."""
    return _numa(host.read_many([f"{path}/numa_node"])[0])


def _numa(got: bytes | HostError) -> int | None:
    """A ``numa_node`` file's content as :meth:`Host.read_many` gives it (an absent file:
    unknown; any other read error is raised, as a read would)."""
    if isinstance(got, NotFound):
        return None
    if isinstance(got, HostError):
        raise got
    t = got.decode("utf-8", "replace").strip()
    return int(t) if t.isascii() and t.isdigit() else None


def level(a: str, a_numa: int | None, b: str, b_numa: int | None) -> str:
    """The distance between PCI functions at resolved paths ``a`` and ``b``."""
    ca, cb = _chain(a), _chain(b)
    if not ca or not cb or ca[0] != cb[0]:
        return "NODE" if a_numa is not None and a_numa == b_numa else "SYS"
    common = 0
    while common < min(len(ca), len(cb)) - 1 and ca[common] == cb[common]:
        common += 1
    if common <= 1:  # only the host bridge (pci<dom>:<bus>) is shared
        return "PHB"
    hops = max(len(ca) - 1 - common, len(cb) - 1 - common)
    return "PIX" if hops <= 1 else "PXB"


def _function_path(host: Host, dev: str, known: Mapping[str, PciDev]) -> str | None:
    """Where RDMA device ``dev``'s PCI function sits: its ``device`` link names the function
    (``../../../0000:19:00.0``), whose path the scan's PCI list already resolved; a link to
    a function that list lacks is resolved here.  ``None``: not a PCI function."""
    link = host.readlink(f"{IB}/{dev}/device")
    found = known.get(link.rsplit("/", 1)[-1]) if link else None
    if found is not None:
        return found.path
    try:
        path = host.resolve(f"{IB}/{dev}/device")
    except HostError:
        return None
    return path if is_bdf(path.rsplit("/", 1)[-1]) else None


def nics(host: Host) -> list[Nic]:
    """RDMA devices backed by a PCI function (live only)."""
    known = {d.bdf: d for d in pci_devices(host)}
    found = []
    for dev in sorted(host.listdir(IB))[:256] if host.live else []:
        path = _function_path(host, dev, known)
        if path is not None:
            found.append((dev, path))
    numas = host.read_many([f"{path}/numa_node" for _, path in found])
    return [Nic(dev, path, _numa(got)) for (dev, path), got in zip(found, numas, strict=True)]


def _bridges(gpu: PciDev) -> list[tuple[str, str]]:
    """``(bdf, sysfs directory)`` of each bridge between the GPU and its host bridge."""
    chain = _chain(gpu.path)
    prefix = "/sys/devices/" + chain[0]
    return [(bdf, prefix + "/" + "/".join(chain[1:i + 1]))
            for i, bdf in enumerate(chain[1:-1], 1)]


def _width(got: bytes | HostError) -> int | None:
    if isinstance(got, HostError):
        return None
    try:
        return sysfs.parse_width(got.decode("utf-8", "replace"))
    except ParseError:
        return None


def degraded_links(host: Host, gpu: PciDev) -> tuple[Link, ...]:
    """Bridges between the GPU and its root port whose link is narrower than both ends
    allow (the GPU's own link is ``pci.link``'s).  Bridges shared by several GPUs (a PCIe
    switch) are read once: the files are cached for the scan."""
    out = []
    for bdf, base in _bridges(gpu):
        cur, top = (_width(got) for got in host.read_many(
            [f"{base}/current_link_width", f"{base}/max_link_width"]))
        if cur is not None and top is not None and 0 < cur < top:
            out.append(Link(bdf, cur, top))
    return tuple(out)


def gpu_places(host: Host) -> list[GpuPlace]:
    """Every GPU (physical functions) with its NUMA node, nearest NICs and degraded links."""
    ns = nics(host)
    gpus = [d for d in pci_devices(host) if d.is_gpu and not d.virtfn]
    out = []
    numas = host.read_many([f"{d.path}/numa_node" for d in gpus])
    for d, got in zip(gpus, numas, strict=True):
        numa = _numa(got)
        lv = tuple((n.name, level(d.path, numa, n.path, n.numa)) for n in ns)
        best = min((LEVELS.index(x) for _, x in lv), default=None)
        near = tuple(n for n, x in lv if best is not None and LEVELS.index(x) == best)
        out.append(GpuPlace(d.bdf, d.path, numa, near,
                            LEVELS[best] if best is not None else None, lv,
                            degraded_links(host, d)))
    return out
