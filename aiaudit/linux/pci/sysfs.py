"""Formats of PCI and RDMA sysfs attributes.

PCI (Documentation/ABI/testing/sysfs-bus-pci; drivers/pci/pci-sysfs.c):

- ``vendor``, ``device``: ``0x10de``; ``class``: ``0x030200`` (base class, subclass,
  prog-if; 24 bits).
- ``current_link_speed`` / ``max_link_speed``: ``pci_speed_string()`` of
  drivers/pci/probe.c, ``"16.0 GT/s PCIe"`` since Linux 4.17 (``"8 GT/s"`` before),
  ``"Unknown"`` when the register holds no known speed.
- ``current_link_width`` / ``max_link_width``: a decimal lane count (``16``); 0 while the
  link is down.

RDMA (Documentation/ABI/stable/sysfs-class-infiniband; drivers/infiniband/core/sysfs.c):

- ``ports/<n>/state``: ``"4: ACTIVE"`` (``<enum>: <name>``, DOWN=1, INIT=2, ARMED=3,
  ACTIVE=4, ACTIVE_DEFER=5).
- ``ports/<n>/phys_state``: ``"5: LinkUp"``.
- ``ports/<n>/rate``: ``"200 Gb/sec (4X HDR)"`` (``rate_show``: the number may end in
  ``.5``).
- ``ports/<n>/link_layer``: ``InfiniBand``, ``Ethernet`` (RoCE) or ``Unknown``.
"""

from __future__ import annotations

import re

from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern

_SPEED = lazy_pattern(r"(\d{1,3}(?:\.\d{1,2})?) GT/s(?: PCIe)?")
_RATE = lazy_pattern(r"(\d{1,5}(?:\.\d{1,2})?) Gb/sec(?: \(.{0,32}\))?")

PCI_CLASS_DISPLAY = 0x03
"""Base class of display controllers (VGA 0x0300, 3D 0x0302: compute GPUs)."""
PCI_CLASS_NETWORK = 0x02
"""Base class of network controllers (Ethernet 0x0200, InfiniBand 0x0207)."""
PCI_CLASS_BRIDGE_OTHER = 0x0680
"""Class/subclass of "other bridge" devices: how NVSwitches enumerate."""
PCI_CLASS_BRIDGE_PCI = 0x0604
"""PCI-to-PCI bridge: root ports and switch ports."""


def parse_hex(text: str, bits: int = 32) -> int:
    """``0x10de`` -> 4318; a value wider than ``bits`` is refused."""
    t = text.strip()
    if not re.fullmatch(r"0x[0-9a-fA-F]{1,8}", t):
        raise ParseError(f"not a hex value: {t[:40]!r}")
    v = int(t, 16)
    if v >> bits:
        raise ParseError(f"value wider than {bits} bits: {t!r}")
    return v


def parse_speed(text: str) -> float | None:
    """``"16.0 GT/s PCIe"`` -> 16.0; ``"Unknown"`` -> ``None``."""
    t = text.strip()
    if t == "Unknown":
        return None
    m = _SPEED().fullmatch(t)
    if not m:
        raise ParseError(f"not a PCIe link speed: {t[:40]!r}")
    return float(m.group(1))


def parse_width(text: str) -> int:
    """``"16"`` -> 16."""
    t = text.strip()
    if not re.fullmatch(r"\d{1,3}", t):
        raise ParseError(f"not a PCIe link width: {t[:40]!r}")
    return int(t)


def parse_port_state(text: str) -> tuple[int, str]:
    """``"4: ACTIVE"`` -> ``(4, "ACTIVE")`` (also ``phys_state``'s ``"5: LinkUp"``)."""
    t = text.strip()
    m = re.fullmatch(r"(\d{1,2}): ([A-Za-z_ ]{1,32})", t)
    if not m:
        raise ParseError(f"not a port state: {t[:40]!r}")
    return int(m.group(1)), m.group(2)


def parse_rate(text: str) -> float:
    """``"200 Gb/sec (4X HDR)"`` -> 200.0."""
    t = text.strip()
    m = _RATE().fullmatch(t)
    if not m:
        raise ParseError(f"not a port rate: {t[:40]!r}")
    return float(m.group(1))
