"""CUDA forward compatibility (:mod:`aiaudit.linux.gpu.compat`): Data Center GPUs only."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from aiaudit.linux.gpu import compat
from aiaudit.linux.gpu.stack import Lib

LIB = Lib("libcuda.so", "570.124.06", "/usr/local/cuda-12.8/compat/libcuda.so.570.124.06",
          None, True)


@pytest.mark.parametrize(("model", "datacenter"), [
    ("NVIDIA H100 80GB HBM3", True), ("NVIDIA A100-SXM4-80GB", True), ("Tesla T4", True),
    ("NVIDIA L40S", True), ("NVIDIA GH200 480GB", True), ("NVIDIA B200", True),
    ("NVIDIA GeForce RTX 4090", False), ("NVIDIA RTX A6000", False),
    ("Quadro RTX 8000", False),
])
def test_is_datacenter(model: str, datacenter: bool) -> None:
    assert compat.is_datacenter(model) is datacenter


def test_forward_compat() -> None:
    status, text = compat.forward_compat("datacenter", ["NVIDIA H100 80GB HBM3"], LIB,
                                         "535.129.03")
    assert status is Status.PASS and text.startswith("run on driver 535.129.03 through ")
    assert text.endswith("GPU models: NVIDIA H100 80GB HBM3")
    status, text = compat.forward_compat("never", ["NVIDIA H100 80GB HBM3"], LIB, "535.129.03")
    assert status is Status.FAIL and "forward_compat: never" in text
    status, text = compat.forward_compat(
        "datacenter", ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"], LIB, "535.129.03")
    assert status is Status.FAIL and "RTX 4090 is not a Data Center GPU" in text
    assert "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE" in text
    status, text = compat.forward_compat(None, [], LIB, "535.129.03")
    assert status is Status.PASS and "the GPU model is not known here" in text
