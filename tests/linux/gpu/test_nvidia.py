"""NVIDIA version strings: /proc/driver/nvidia/version, library names, nvidia-smi CSV."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.gpu import nvidia

PROPRIETARY = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 "
               "18:56:32 UTC 2023\nGCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1)\n")
OPEN = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 UTC 2024\nGCC version:  gcc 12\n")
AARCH64 = ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.26  Release Build  "
           "(dvs-builder@U16-I2-C04-12-4)  Thu Jan 23 18:32:05 UTC 2025\n")
AARCH64_PROP = "NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.161.08  Tue Mar  5 2024\n"


@pytest.mark.parametrize("text,version,is_open,arch", [
    (PROPRIETARY, "535.129.03", False, "x86_64"),
    (OPEN, "550.54.14", True, "x86_64"),
    (AARCH64, "570.26", True, "aarch64"),
    (AARCH64_PROP, "535.161.08", False, "aarch64"),
])
def test_proc_version(text: str, version: str, is_open: bool, arch: str) -> None:
    pv = nvidia.parse_proc_version(text)
    assert (pv.version, pv.open, pv.arch) == (version, is_open, arch)


def test_proc_version_errors() -> None:
    with pytest.raises(ParseError, match="no 'NVRM"):
        nvidia.parse_proc_version("GCC version: 12\n")
    with pytest.raises(ParseError, match="unrecognised"):
        nvidia.parse_proc_version("NVRM version: something else 1.2\n")


def test_versions_compare_per_component() -> None:
    assert nvidia.parse_version("570.26") == (570, 26)
    assert nvidia.parse_version("580.95.05") == (580, 95, 5)
    # "535.129.03" > "535.54.03" numerically although not as text
    assert nvidia.parse_version("535.129.03") > nvidia.parse_version("535.54.03")
    assert nvidia.branch("470.223.02") == 470
    for bad in ("535", "abc", "535.129.03.1", ""):
        with pytest.raises(ParseError):
            nvidia.parse_version(bad)


def test_lib_version() -> None:
    assert nvidia.lib_version("libcuda.so.535.129.03", "libcuda.so") == "535.129.03"
    assert nvidia.lib_version("libnvidia-ml.so.570.26", "libnvidia-ml.so") == "570.26"
    assert nvidia.lib_version("libcuda.so.1", "libcuda.so") is None
    assert nvidia.lib_version("libcuda.so", "libcuda.so") is None
    assert nvidia.lib_version("libcudart.so.12.1.105", "libcuda.so") is None


def test_persistence_csv() -> None:
    rows = nvidia.parse_persistence_csv(
        "0, 00000000:07:00.0, Enabled\n1, 00000000:0F:00.0, Disabled\n")
    assert [(r.index, r.bus_id, r.mode) for r in rows] == [
        ("0", "00000000:07:00.0", "Enabled"), ("1", "00000000:0F:00.0", "Disabled")]
    with pytest.raises(ParseError):
        nvidia.parse_persistence_csv("")
    with pytest.raises(ParseError):
        nvidia.parse_persistence_csv("NVIDIA-SMI has failed because it couldn't communicate")


@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    for fn in (nvidia.parse_proc_version, nvidia.parse_persistence_csv, nvidia.parse_version):
        try:
            fn(text)
        except ParseError:
            pass
    nvidia.lib_version(text, "libcuda.so")
