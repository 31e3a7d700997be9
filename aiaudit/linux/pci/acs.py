"""The PCIe Access Control Services (ACS) capability in a function's configuration space.

Sources: PCI Express Base Specification 6.0, 7.7.8 (ACS Extended Capability, id 0x000D;
ACS Control register at +6: P2P Request Redirect bit 2, Completion Redirect bit 3);
include/uapi/linux/pci_regs.h (``PCI_EXT_CAP_ID_ACS``, ``PCI_ACS_RR``, ``PCI_ACS_CR``).
The kernel returns only the first 64 bytes of ``config`` to a reader without
CAP_SYS_ADMIN (drivers/pci/pci-sysfs.c ``pci_read_config``), so the extended space (from
0x100) can be walked only when the scan may read it.
"""

from __future__ import annotations

from aiaudit.core.errors import ParseError

ACS_CAP_ID = 0x000D
ACS_RR, ACS_CR = 0x0004, 0x0008
"""ACS Control bits: P2P Request Redirect and P2P Completion Redirect."""
CONFIG_SIZE = 4096
"""Size of a PCIe function's configuration space (the extended space included)."""


def acs_control(config: bytes) -> int | None:
    """The ACS Control register from a 4096-byte PCIe config space, or ``None`` when the
    function has no ACS capability.  Raises :class:`ParseError` when the extended space is
    missing (a short read); a looping or broken capability chain ends the walk."""
    if len(config) < CONFIG_SIZE:
        raise ParseError("extended configuration space not readable")
    off, seen = 0x100, set()
    while off and off not in seen and 0x100 <= off <= CONFIG_SIZE - 4:
        seen.add(off)
        hdr = int.from_bytes(config[off:off + 4], "little")
        if hdr in (0, 0xFFFFFFFF):
            return None
        if hdr & 0xFFFF == ACS_CAP_ID:
            return int.from_bytes(config[off + 6:off + 8], "little")
        off = (hdr >> 20) & 0xFFC
    return None


def redirects_p2p(control: int) -> bool:
    """P2P Request or Completion Redirect is on: peer-to-peer traffic goes up to the root
    complex instead of across the switch."""
    return bool(control & (ACS_RR | ACS_CR))
