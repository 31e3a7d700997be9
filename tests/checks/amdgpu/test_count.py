"""``amdgpu.count``: ROCm sees the GPUs the node should have."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.amdgpu.trees import amd_node
from tests.helpers import run_check


def test_all_gpus_initialised(make_root) -> None:
    [r] = run_check("amdgpu.count", make_root(*amd_node(4)), {"min_count": 4}, live=True)
    assert r.status is Status.PASS and r.actual == "4"


def test_gpu_the_driver_did_not_initialise(make_root) -> None:
    [r] = run_check("amdgpu.count", make_root(*amd_node(4, kfd=3)), live=True)
    assert r.status is Status.FAIL and "0000:13:00.0" in r.message
    assert any(e.source.endswith("0000:13:00.0/driver") for e in r.evidence)


def test_too_few_and_no_kfd(make_root) -> None:
    [r] = run_check("amdgpu.count", make_root(*amd_node(2)), {"min_count": 8}, live=True)
    assert r.status is Status.FAIL and "at least 8" in r.message
    files, links = amd_node(2, kfd=0)
    [r] = run_check("amdgpu.count", make_root(files, links), live=True)
    assert r.status is Status.FAIL and "0 GPU(s)" in r.message


def test_offline_and_non_amd(make_root) -> None:
    [r] = run_check("amdgpu.count", make_root(*amd_node(1)))
    assert r.status is Status.SKIP and "offline" in r.message
    [r] = run_check("amdgpu.count", make_root({"/etc/os-release": "ID=debian\n"}), live=True)
    assert r.status is Status.SKIP and "no AMD GPU" in r.message
    [r] = run_check("amdgpu.count", make_root({}), {"require_gpu": True}, live=True)
    assert r.status is Status.FAIL and r.evidence
