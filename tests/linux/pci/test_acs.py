"""The ACS capability in PCIe configuration space (:mod:`aiaudit.linux.pci.acs`)."""

from __future__ import annotations

import struct

import pytest

from aiaudit.linux.pci import acs
from tests.checks.readiness_trees import config


def test_acs_control_parser() -> None:
    assert acs.acs_control(config(0x1D)) == 0x1D
    assert acs.acs_control(config(None)) is None
    with pytest.raises(Exception, match="extended"):
        acs.acs_control(bytes(64))
    loop = bytearray(4096)
    loop[0x100:0x104] = struct.pack("<I", 0x0001 | (0x100 << 20))  # points at itself
    assert acs.acs_control(bytes(loop)) is None
