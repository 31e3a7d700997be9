"""``gpu.uvm``: nvidia-uvm loaded (live) or installed beside nvidia.ko (offline)."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.checks.readiness_trees import gpu_host
from tests.helpers import run_check
from tests.linux.kmod.test_modinfo import make_ko


def test_uvm_live_and_offline(make_root) -> None:
    files, links = gpu_host()
    [r] = run_check("gpu.uvm", make_root(files, links), live=True)
    assert r.status is Status.FAIL
    [r] = run_check("gpu.uvm", make_root(files, links, dirs=("/sys/module/nvidia_uvm",)),
                    live=True)
    assert r.status is Status.PASS
    d = "/lib/modules/6.1.0-18-amd64/updates/dkms"
    [r] = run_check("gpu.uvm", make_root({f"{d}/nvidia.ko": make_ko("535.161.08")}))
    assert r.status is Status.FAIL and r.aspect is Aspect.PERSISTED
    [r] = run_check("gpu.uvm", make_root({f"{d}/nvidia.ko": make_ko("535.161.08"),
                                          f"{d}/nvidia-uvm.ko": b"x"}))
    assert r.status is Status.PASS
