"""The AMD facts a node-class baseline pins (the seam for ``aiaudit baseline``)."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.amdgpu.facts import baseline_facts
from tests.helpers import ROOTS


def test_live_mi300x_facts() -> None:
    facts = {f.name: f for f in baseline_facts(Host(str(ROOTS / "amd-mi300x-good" / "root"),
                                                     live=True))}
    assert facts["amd.gpu.count"].value == "8"
    assert facts["amd.gpu.model"].value == "Instinct MI300X"
    assert facts["amd.gpu.0000:27:00.0.pcie_width"].value == "16"
    assert facts["amd.gpu.0000:27:00.0.pcie_speed"].value == "32 GT/s"
    assert facts["amd.gpu.0000:27:00.0.compute_partition"].value == "CPX"
    assert facts["amd.driver"].value == "6.12.12"
    assert facts["amd.driver"].evidence.source == "/sys/module/amdgpu/version"
    assert facts["amd.rocm"].value == "6.4.4-129"


def test_offline_facts_are_what_files_say() -> None:
    facts = {f.name: f.value for f in baseline_facts(Host(str(ROOTS / "amd-rocm-offline"
                                                               / "root")))}
    assert facts == {"amd.driver": "6.10.5", "amd.rocm": "6.4.1-83"}


def test_no_amd_no_facts(make_root) -> None:
    assert baseline_facts(Host(str(make_root({"/etc/os-release": "ID=debian\n"})))) == []
