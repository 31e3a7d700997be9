"""Parsers of the issue-28 GPU modules: any text gives a value or ``ParseError``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.gpu import devnodes, fabricmanager, smidoc
from aiaudit.linux.gpu.fabric import fabric_states
from tests.checks.handover.smihost import capture


def test_fields_and_config() -> None:
    # /proc/driver/nvidia/params lines (both spellings seen in the wild)
    assert devnodes.fields("ModifyDeviceFiles: 1\nDeviceFileMode: 438\nNVreg_DeviceFileGID: 44\n"
                           "RegistryDwords: \"\"\n") == {
        "ModifyDeviceFiles": 1, "DeviceFileMode": 438, "DeviceFileGID": 44}
    cfg = fabricmanager.parse_config("# c\nFABRIC_MODE=1\n  LOG_LEVEL = 4\nFABRIC_MODE=0\nx\n")
    assert cfg["FABRIC_MODE"] == fabricmanager.Setting("0", 4)
    assert cfg["LOG_LEVEL"].value == "4"
    assert smidoc.mib("81559 MiB") == 81559 and smidoc.mib("N/A") is None


def test_v13_health_block_of_a_real_capture_is_not_a_fabric() -> None:
    doc = smidoc.parse(capture("telegraf-pro-6000-maxq-blackwell-v13.xml"))
    [f] = fabric_states(doc)
    assert not f.on_fabric and f.health == () and f.problems() == []


@pytest.mark.parametrize("bad", ["", "<a/>", "<nvidia_smi_log>", "x" * 20,
                                 '<!DOCTYPE x [<!ENTITY a "b">]><nvidia_smi_log/>'])
def test_bad_documents(bad: str) -> None:
    with pytest.raises(ParseError):
        smidoc.parse(bad)


@given(st.text(max_size=200))
def test_total(text: str) -> None:
    assert isinstance(devnodes.fields(text), dict)
    assert isinstance(fabricmanager.parse_config(text), dict)
    smidoc.mib(text)
    try:
        smidoc.parse(text)
    except ParseError:
        pass
