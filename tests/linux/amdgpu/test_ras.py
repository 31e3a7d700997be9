"""The amdgpu RAS sysfs formats (amdgpu_ras.c) and the driver's bad-page threshold."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.amdgpu import ras

# the format amdgpu_ras_sysfs_read prints ("%s: %lu\n%s: %lu\n") and the ACA one with de
KERNEL_DOC = "ue: 0\nce: 1\n"


def test_counts_legacy_and_aca() -> None:
    assert ras.parse_counts(KERNEL_DOC) == ras.Counts(0, 1)
    assert ras.parse_counts("ue: 2\nce: 7\nde: 1\n") == ras.Counts(2, 7, 1)
    assert ras.parse_counts("Query currently inaccessible\n") is None


@pytest.mark.parametrize("text", ["", "ue: 1\n", "ue: x\nce: 0\n", "ue: 1\nue: 2\nce: 0\n",
                                  "UE: 1\nCE: 0\n", "ue: 1 ce: 0\n", "ue: -1\nce: 0\n"])
def test_counts_refuse_other_shapes(text: str) -> None:
    with pytest.raises(ParseError):
        ras.parse_counts(text)


def test_bad_pages_flags() -> None:
    # the kernel-doc example lines (amdgpu_ras.c "gpu_vram_bad_pages Interface")
    got = ras.parse_bad_pages("0x00000001 : 0x00001000 : R\n0x00000002 : 0x00001000 : P\n"
                              "0x00000003 : 0x00001000 : F\n0x00000004 : 0x00001000 : R\n")
    assert (got.reserved, got.pending, got.failed, got.total) == (2, 1, 1, 4)
    assert got.first[0] == "0x00000001 : 0x00001000 : R" and len(got.first) == 3
    assert ras.parse_bad_pages("").total == 0


@pytest.mark.parametrize("line", ["0x1 : 0x1000 : X", "1 : 0x1000 : R", "0x1:0x1000:R",
                                  "0x00000001 : 0x00001000 : R extra"])
def test_bad_pages_refuse_other_lines(line: str) -> None:
    with pytest.raises(ParseError, match="line 1"):
        ras.parse_bad_pages(line + "\n")


def test_features_and_blocks() -> None:
    assert ras.parse_features("feature mask: 0x3fbb\n") == 0x3FBB
    with pytest.raises(ParseError):
        ras.parse_features("3fbb")
    assert ras.block_of("umc_err_count") == "umc" and ras.block_of("aca_xgmi_wafl") == "xgmi_wafl"
    assert ras.block_of("features") is None and ras.block_of("_err_count") is None


@pytest.mark.parametrize(("param", "vram", "want"), [
    (None, None, 128), (-1, 206141652992, 128), (0, None, None), (50, None, 50),
    (-2, 206141652992, 1965), (-2, None, 128), (-7, None, 128)])
def test_driver_threshold(param, vram, want) -> None:
    assert ras.driver_threshold(param, vram)[0] == want


@given(st.text(max_size=300))
def test_parsers_return_or_raise_parse_error(text: str) -> None:
    for fn in (ras.parse_counts, ras.parse_bad_pages, ras.parse_features):
        try:
            fn(text)
        except ParseError:
            pass
