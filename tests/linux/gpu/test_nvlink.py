"""``nvidia-smi nvlink --status`` / ``--errorcounters`` parsing: the fixtures of
``tests/fixtures/gpu/nvlink`` (hand-made in the formats of published captures: see its
PROVENANCE.md), other wordings, hostile output."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.gpu import nvlink

NVLINK = Path(__file__).resolve().parents[2] / "fixtures" / "gpu" / "nvlink"


def fixture(name: str) -> str:
    """A fixture's text."""
    return (NVLINK / name).read_text()


def test_hgx_a100_status() -> None:
    gpus = nvlink.parse_status(fixture("hgx-a100-8x-status.txt"))
    assert [g.index for g in gpus] == list(range(8))
    g = gpus[0]
    assert g.name == "NVIDIA A100-SXM4-40GB" and g.uuid and g.uuid.startswith("GPU-")
    assert len(g.active) == 12 and {ln.speed_gbps for ln in g.links} == {25.0}
    assert g.subject == f"GPU 0 ({g.uuid})" and g.note is None


def test_bridge_pair_status() -> None:
    gpus = nvlink.parse_status(fixture("h100-pcie-bridge-status.txt"))
    for g in gpus:
        assert len(g.links) == 18 and len(g.active) == 12
        assert [ln.index for ln in g.links if ln.active is False] == [4, 5, 10, 11, 16, 17]
        assert {ln.speed_gbps for ln in g.active} == {26.562}


def test_no_bridge_and_verdicts() -> None:
    gpus = nvlink.parse_status(fixture("a100-pcie-no-bridge-status.txt"))
    assert [(g.links, g.note) for g in gpus] == [((), "all links inactive")] * 2
    text = ("GPU 0: NVIDIA RTX A4000 (UUID: GPU-a) Device does not have or support Nvlink\n"
            "GPU 1: Quadro RTX 5000 (UUID: GPU-b) NVML: Unable to retrieve Nvlink "
            "information as all links are inActive\n"
            "GPU 2: Tesla V100-SXM2-32GB\n\t Link 0: 25.781 GB/s\n\t Link 1: 20.000 GB/s\n"
            "GPU 3: Fixture\nLink 0: some future status\n")
    a, b, c, d = nvlink.parse_status(text)
    assert (a.note, b.note, a.uuid) == ("no NVLink", "all links inactive", "GPU-a")
    assert c.uuid is None and c.name == "Tesla V100-SXM2-32GB"
    assert [ln.speed_gbps for ln in c.links] == [25.781, 20.0]
    assert d.unknown and d.unknown[0].raw == "some future status"
    assert nvlink.parse_status("") == ()
    banner = "==============STATUS==============\nGPU 0: X\n\t Link 0: <inactive>\n"
    assert nvlink.parse_status(banner)[0].links[0].active is False


def test_legacy_and_nvlink5_counters() -> None:
    gpus = nvlink.parse_errors(fixture("hgx-a100-8x-errors.txt"))
    assert len(gpus) == 8 and len(gpus[0].links) == 12
    link, counters = gpus[0].links[0]
    assert link == 0 and dict(counters) == {"Replay Errors": 0, "Recovery Errors": 0,
                                           "CRC Errors": 0}
    assert nvlink.categories(counters) == {"replay": 0, "recovery": 0, "crc": 0}
    b300 = nvlink.parse_errors(fixture("b300-nvlink5-errors.txt"))
    cats = nvlink.categories(b300[0].links[0][1])
    # BER values are not counts; FEC buckets and successful recoveries are not judged
    assert cats == {"packet": 0, "recovery": 0, "crc": 0}
    assert ("FEC Errors - 0", 36140749276) in b300[0].links[0][1]
    assert "Effective BER" not in dict(b300[0].links[0][1])


@pytest.mark.parametrize("bad", ["Link 0: 25 GB/s\n", "garbage\n", "x" * 100])
def test_not_nvlink_output(bad: str) -> None:
    with pytest.raises(ParseError):
        nvlink.parse_status(bad)
    with pytest.raises(ParseError):
        nvlink.parse_errors(bad)


def test_bounds() -> None:
    many_links = "GPU 0: X\n" + "".join(f"Link {i}: 25 GB/s\n" for i in range(65))
    with pytest.raises(ParseError, match="more than 64 links"):
        nvlink.parse_status(many_links)
    many_gpus = "".join(f"GPU {i}: X\n" for i in range(1025))
    with pytest.raises(ParseError, match="more than 1024 GPUs"):
        nvlink.parse_errors(many_gpus)
    with pytest.raises(ParseError, match="larger than"):
        nvlink.parse_status("GPU 0: X\n" + "a" * nvlink.MAX_OUTPUT)
    with pytest.raises(ParseError, match="lines"):
        nvlink.parse_status("GPU 0: X\n" + "\n" * nvlink.MAX_LINES)
    # an endless number is not a counter
    [g] = nvlink.parse_errors("GPU 0: X\nLink 0: Replay Errors: " + "9" * 5000 + "\n")
    assert g.links == ()


LINES = st.sampled_from(["GPU 0: NVIDIA H100 (UUID: GPU-1)", "GPU 1: X", "\t Link 0: 25 GB/s",
                         "Link 3: <inactive>", "Link 2: Replay Errors: 7",
                         "Link 2: CRC Errors: x", "NVML: Unable to retrieve", "", "=="])


@settings(max_examples=300)
@given(st.lists(st.one_of(LINES, st.text(max_size=40)), max_size=30))
def test_total(lines: list[str]) -> None:
    text = "\n".join(lines)
    for parse in (nvlink.parse_status, nvlink.parse_errors):
        try:
            parse(text)
        except ParseError:
            pass


def test_real_h100_hgx_capture() -> None:
    """GPU 0 of an 8x H100 80GB HBM3 HGX node (Apache-2.0 capture, see PROVENANCE.md)."""
    [g] = nvlink.parse_status(fixture("awesome-ml-sys-h100-hbm3-gpu0-status.txt"))
    assert (g.index, g.name, g.uuid) == (0, "NVIDIA H100 80GB HBM3",
                                         "GPU-5a10e6e5-95f7-2785-ed63-6f6147f304f7")
    assert [ln.index for ln in g.active] == list(range(18))
    assert {ln.speed_gbps for ln in g.links} == {26.562} and not g.unknown
