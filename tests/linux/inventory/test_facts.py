"""Class facts gathered from fixture roots built from real sysfs/procfs layouts, and the
comparison that holds a node to its class."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.host import Host
from aiaudit.linux.inventory.compare import compare
from aiaudit.linux.inventory.facts import inventory
from aiaudit.linux.inventory.model import KINDS
from tests.helpers import ROOTS

HGX = ROOTS / "node-hgx-nvswitch" / "root"
MI300X = ROOTS / "amd-mi300x-good" / "root"


def test_hgx_snapshot_facts() -> None:
    inv = inventory(Host(str(HGX), live=True))
    v = inv.values()
    assert v["gpu.nvidia.count"] == 8
    assert set(v["gpu.nvidia.model"].values()) == {"NVIDIA H100 80GB HBM3"}
    # GPU 4 of this node trained at x8 (the fixture's known fault)
    assert v["gpu.pcie.width"]["0000:58:00.0"] == 8
    assert sorted(set(v["gpu.pcie.width"].values())) == [8, 16]
    assert set(v["gpu.pcie.gen"].values()) == {5}
    assert v["hca.count"] == 8
    assert v["hca.port_rate"]["mlx5_3/1"] == "200 Gb/sec (4X HDR)"
    assert v["gpu.nvidia.driver"] == "535.161.08"
    assert v["packages"]["nvidia-fabricmanager-535"] == "535.161.08-1"
    assert "BOOT_IMAGE" not in v["kernel.cmdline"]
    assert inv.unknown == ()
    assert {f.name for f in inv.facts} <= set(KINDS)


def test_amd_snapshot_facts() -> None:
    v = inventory(Host(str(MI300X), live=True)).values()
    assert v["gpu.amd.count"] == 8
    assert "gpu.nvidia.count" not in v
    assert set(v["gpu.pcie.width"].values()) == {16}
    assert "rocm-core" in v["packages"]
    assert v["gpu.amd.model"] == "Instinct MI300X"
    assert set(v["gpu.amd.compute_partition"].values()) == {"CPX"}
    assert v["rocm.release"].startswith("6.4.4")
    # offline, what files say: the packaged driver and the ROCm release
    off = inventory(Host(str(MI300X), live=False)).values()
    assert off["gpu.amd.driver"] == "6.12.12" and "gpu.amd.count" not in off


def test_offline_root_says_what_it_cannot_know() -> None:
    inv = inventory(Host(str(HGX), live=False))
    names = {f.name for f in inv.facts}
    assert names == {"packages"}
    assert {u.name for u in inv.unknown} >= {"gpu.*", "hca.*", "kernel.cmdline"}
    assert all(not f.live for f in inv.facts)


def test_live_host_facts_are_read_once_per_run() -> None:
    host = Host("/", live=True)
    assert inventory(host) is inventory(host)
    assert "kernel.release" in inventory(host).values()


def test_compare_kinds() -> None:
    assert compare("equal", 8, 8).same
    assert compare("equal", 8, 7).differences == ("expected 8, found 7",)
    assert compare("tolerance", 2015.5, 2000.0, 0.02).same
    assert not compare("tolerance", 2015.5, 1900.0, 0.02).same
    v = compare("per_device", {"a": 16, "b": 16}, {"a": 16, "b": 8})
    assert not v.same and v.differences == ("b: expected 16, found 8",)
    # a device missing is the count rule's finding, not this one's
    v = compare("per_device", {"a": 16, "b": 16}, {"a": 16})
    assert v.same and "b: not on this node" in v.notes[0]
    assert not compare("per_device", {"a": 16}, {"z": 16}).same
    v = compare("required_keys", {"nccl": "2.21"}, {"nccl": "2.21", "extra": "1"})
    assert v.same and "extra 1" in v.notes[0]
    assert not compare("required_keys", {"nccl": "2.21"}, {}).same


_values = st.one_of(st.integers(0, 1000), st.text(max_size=8))


@given(st.dictionaries(st.text(max_size=6), _values, max_size=6))
def test_a_value_always_matches_itself(d: dict[str, object]) -> None:
    for kind in ("equal", "per_device", "required_keys"):
        assert compare(kind, d, dict(d)).same


@given(st.dictionaries(st.text(max_size=6), st.integers(0, 64), min_size=1, max_size=6),
       st.data())
def test_one_changed_device_is_one_difference(d: dict[str, int], data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(d)))
    other = dict(d)
    other[key] = d[key] + 1
    v = compare("per_device", d, other)
    assert not v.same and len(v.differences) == 1 and v.differences[0].startswith(key)
