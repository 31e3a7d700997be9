"""``gpu.forward_compat`` (and forward compatibility in ``gpu.cuda_driver``)."""

from __future__ import annotations

from pathlib import Path

from aiaudit.core.model import Status
from tests.checks.gpu.trees import PROC, stack, toolkit
from tests.helpers import run_check


def _compat(tk: str, version: str) -> tuple[dict, dict]:
    return ({f"/usr/local/{tk}/compat/libcuda.so.{version}": b"x"},
            {f"/usr/local/{tk}/compat/libcuda.so.1": f"libcuda.so.{version}"})


def test_forward_compat_on_datacenter_and_geforce(make_root) -> None:
    cf, cl = _compat("cuda-12.8", "570.124.06")
    info = "/proc/driver/nvidia/gpus/0000:07:00.0/information"
    files = {**toolkit("12.8.1"), **cf, "/proc/driver/nvidia/version": PROC.format(
        v="535.129.03"), info: "Model: \t\t NVIDIA H100 80GB HBM3\n"}
    root = stack(make_root, files=files, links=cl)
    res = run_check("gpu.cuda_driver", root, {"table": "release"}, live=True)
    assert res[0].status is Status.PASS and "H100" in res[0].message
    assert run_check("gpu.forward_compat", root, live=True)[0].status is Status.PASS
    never = run_check("gpu.cuda_driver", root, {"table": "release", "forward_compat": "never"},
                      live=True)
    assert never[0].status is Status.FAIL
    Path(str(root) + info).write_text("Model: \t\t NVIDIA GeForce RTX 4090\n")
    res = run_check("gpu.forward_compat", root, live=True)
    assert res[0].status is Status.FAIL and "RTX 4090" in res[0].message


def test_stale_forward_compat_fails_and_absent_skips(make_root) -> None:
    cf, cl = _compat("cuda-12.1", "530.30.02")
    root = stack(make_root, files={**toolkit("12.1.1"), **cf}, links=cl)
    res = run_check("gpu.forward_compat", root)
    assert res[0].status is Status.FAIL
    assert "cuda-compat-12-1" in res[0].remediation.snippets[0].content
    assert run_check("gpu.forward_compat", stack(make_root))[0].status is Status.SKIP
