# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""What a PCI address in a kernel message is, from sysfs (live): a GPU, an HCA, an NVSwitch,
a bridge above one of them, or something else.  PCIe AER names the port that saw the error,
most often the bridge above the device, so a bridge is named by what sits below it."""

from __future__ import annotations

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host

ACCELERATOR_ROLES = ("gpu", "hca", "nvswitch")

_MAX_BELOW = 64
"""Most devices looked at below one bridge (a hostile sysfs cannot make the walk long)."""


def role(pci_class: str, vendor: str) -> str:
    """``gpu``, ``hca``, ``nvswitch``, ``bridge`` or ``other`` from sysfs ``class`` and
    ``vendor`` (``0x030200``, ``0x10de``)."""
    c = pci_class.lower()
    v = vendor.lower()
    if c.startswith(("0x0300", "0x0302", "0x0380")) and v in ("0x10de", "0x1002"):
        return "gpu"
    if c.startswith("0x0207") or (c.startswith("0x0200") and v == "0x15b3"):
        return "hca"
    if c.startswith("0x0680") and v == "0x10de":
        return "nvswitch"
    if c.startswith("0x0604"):
        return "bridge"
    return "other"


def _attrs(host: Host, base: str) -> tuple[str, str] | None:
    got = host.read_many([f"{base}/class", f"{base}/vendor"], cap=64)
    if any(isinstance(g, HostError) for g in got):
        return None
    return tuple(g.decode("ascii", "replace").strip() for g in got)  # type: ignore[union-attr,return-value]


def describe(host: Host, bdf: str) -> tuple[str, str]:
    """(role, words) for the device at ``bdf``: role is one of :data:`ACCELERATOR_ROLES`,
    ``bridge:<role>`` (a bridge with such a device below it), ``other``, or ``unknown``
    (no sysfs: an offline scan or a snapshot without it)."""
    if not host.live:
        return "unknown", bdf
    base = f"/sys/bus/pci/devices/{bdf}"
    got = _attrs(host, base)
    if got is None:
        return "unknown", bdf
    r = role(*got)
    if r != "bridge":
        return r, f"{_WORDS.get(r, 'device')} {bdf}"
    below = _below(host, base)
    if below is None:
        return "bridge", f"PCIe port {bdf}"
    r2, dev = below
    return f"bridge:{r2}", f"PCIe port {bdf} above {_WORDS[r2]} {dev}"


_WORDS = {"gpu": "GPU", "hca": "HCA", "nvswitch": "NVSwitch", "other": "device"}


def _below(host: Host, base: str) -> tuple[str, str] | None:
    """The first accelerator below the bridge at ``base`` (breadth first, bounded)."""
    todo = [base]
    seen = 0
    while todo and seen < _MAX_BELOW:
        d = todo.pop(0)
        try:
            names = host.listdir(d)
        except HostError:
            continue
        for n in names:
            if len(n) != 12 or n[4] != ":" or n[7] != ":" or n[10] != ".":
                continue  # not a PCI function directory
            seen += 1
            got = _attrs(host, f"{d}/{n}")
            if got is None:
                continue
            r = role(*got)
            if r in ACCELERATOR_ROLES:
                return r, n
            if r == "bridge":
                todo.append(f"{d}/{n}")
    return None
