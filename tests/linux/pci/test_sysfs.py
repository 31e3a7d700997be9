"""PCI and RDMA sysfs attribute formats (:mod:`aiaudit.linux.pci.sysfs`); every parser
gives a value or a ParseError for any text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.pci import sysfs as pcisysfs


def test_pci_formats() -> None:
    assert pcisysfs.parse_speed("16.0 GT/s PCIe\n") == 16.0
    assert pcisysfs.parse_speed("8 GT/s") == 8.0  # Linux < 4.17
    assert pcisysfs.parse_speed("2.5 GT/s PCIe") == 2.5
    assert pcisysfs.parse_speed("Unknown") is None
    assert pcisysfs.parse_width("16\n") == 16
    assert pcisysfs.parse_hex("0x030200", 24) == 0x030200
    assert pcisysfs.parse_port_state("4: ACTIVE\n") == (4, "ACTIVE")
    assert pcisysfs.parse_port_state("5: LinkUp") == (5, "LinkUp")
    assert pcisysfs.parse_rate("400 Gb/sec (4X NDR)") == 400.0
    assert pcisysfs.parse_rate("2.5 Gb/sec (1X SDR)") == 2.5
    with pytest.raises(ParseError):
        pcisysfs.parse_hex("0x1000000", 24)


@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    for fn in (pcisysfs.parse_speed, pcisysfs.parse_width, pcisysfs.parse_port_state,
               pcisysfs.parse_rate, pcisysfs.parse_hex):
        try:
            fn(text)
        except ParseError:
            pass
