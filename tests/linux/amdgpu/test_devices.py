"""AMD GPUs on the PCI bus and in the KFD topology, on real captures (tests/fixtures/amd)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.linux.amdgpu import devices
from tests.helpers import FIXTURES, ROOTS

CAPTURE = FIXTURES / "amd" / "kfd-topology-mi300x-cpx" / "nodes"


def test_every_captured_properties_file_parses() -> None:
    nodes = sorted(CAPTURE.iterdir(), key=lambda p: int(p.name))
    assert len(nodes) == 65
    props = [devices.parse_properties((n / "properties").read_text()) for n in nodes]
    gpus = [p for p in props if p["simd_count"] > 0]
    assert len(gpus) == 63 and {p["device_id"] for p in gpus} == {0x74A1}
    assert {p["gfx_target_version"] for p in gpus} == {90402}


def test_kfd_topology_counts_physical_gpus_once() -> None:
    kfd = devices.kfd_topology(Host(str(ROOTS / "amd-mi300x-good" / "root"), live=True))
    assert kfd.present and len(kfd.gpus) == 63 and not kfd.problems
    assert sorted({n.physical for n in kfd.gpus}) == [
        f"0000:{b:02x}:00" for b in (0x05, 0x27, 0x47, 0x65, 0x85, 0xA7, 0xC7, 0xE5)]
    n = kfd.gpus[0]
    assert n.bdf == "0000:05:00.0" and n.gfx == "gfx942" and n.drm_render_minor == 128
    assert devices.kfd_topology(Host(str(ROOTS / "amd-mi300x-good" / "root"))) == \
        devices.Kfd(False)  # live state only


@pytest.mark.parametrize(("domain", "loc", "bdf"), [
    (0, 1280, "0000:05:00.0"), (0, 1287, "0000:05:00.7"), (0, 58624, "0000:e5:00.0"),
    (3, 0x20, "0003:00:04.0")])
def test_location_bdf(domain: int, loc: int, bdf: str) -> None:
    assert devices.location_bdf(domain, loc) == bdf


def mk(version: int) -> str:
    return devices.KfdNode("1", "0000:01:00.0", 0, version, None).gfx


def test_gfx_names() -> None:
    assert (mk(90402), mk(90010), mk(90008), mk(110000)) == ("gfx942", "gfx90a", "gfx908",
                                                             "gfx1100")


def test_instinct_and_radeon_are_told_apart() -> None:
    mi = devices.amd_gpus(Host(str(ROOTS / "amd-mi300x-good" / "root"), live=True))
    assert len(mi) == 8 and all(g.datacenter and g.name == "Instinct MI300X" for g in mi)
    assert mi[0].driver == "amdgpu" and mi[0].drm == ("card1", "renderD128")
    [rx] = devices.amd_gpus(Host(str(ROOTS / "amd-radeon-workstation" / "root"), live=True))
    assert not rx.datacenter and rx.name == "AMD GPU 0x687f" and rx.dev.klass == 0x030000
    [mi210] = [g for g in devices.amd_gpus(Host(str(ROOTS / "amd-nvidia-mixed" / "root"),
                                                live=True))]
    assert mi210.datacenter and mi210.name == "Instinct MI210"


def test_unreadable_kfd_node_is_reported(make_root) -> None:
    root = make_root({f"{devices.KFD_NODES}/0/properties": "simd_count 4\n",
                      f"{devices.KFD_NODES}/1/properties": "garbage line here\n"})
    kfd = devices.kfd_topology(Host(str(root), live=True))
    assert len(kfd.gpus) == 1 and "nodes/1/properties" in kfd.problems[0]


@given(st.text(max_size=200))
def test_properties_parser_returns_or_raises(text: str) -> None:
    try:
        devices.parse_properties(text)
    except ParseError:
        pass
