"""``gpu.count``: the driver sees the GPUs the node should have."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.gpu.trees import PROC, stack
from tests.helpers import run_check


def _gpu_files(driver: list[str], pci: list[str]) -> dict[str, str]:
    f = {f"/proc/driver/nvidia/gpus/{b}/information": "Model: \t\t NVIDIA A100-SXM4-80GB\n"
         for b in driver}
    for b in pci:
        f[f"/sys/bus/pci/devices/{b}/vendor"] = "0x10de\n"
        f[f"/sys/bus/pci/devices/{b}/class"] = "0x030200\n"
    f["/proc/driver/nvidia/version"] = PROC.format(v="535.129.03")
    return f


def test_count(make_root) -> None:
    two = ["0000:07:00.0", "0000:0f:00.0"]
    root = stack(make_root, files=_gpu_files(two, two))
    assert run_check("gpu.count", root, {"min_count": 2}, live=True)[0].status is Status.PASS
    res = run_check("gpu.count", root, {"min_count": 8}, live=True)
    assert res[0].status is Status.FAIL and res[0].remediation
    root = stack(make_root, files=_gpu_files(two[:1], two))
    res = run_check("gpu.count", root, {"min_count": 1}, live=True)
    assert res[0].status is Status.FAIL and "0000:0f:00.0" in res[0].message
    assert run_check("gpu.count", root)[0].status is Status.SKIP  # offline
