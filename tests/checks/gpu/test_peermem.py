"""``gpu.peermem``: nvidia-peermem loaded and configured where RDMA devices exist."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.checks.readiness_trees import gpu_host
from tests.helpers import run_check


def test_peermem(make_root) -> None:
    files, links = gpu_host()
    dirs = ("/sys/class/infiniband/mlx5_0",)
    [r] = run_check("gpu.peermem", make_root(files, links, dirs), live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    dirs2 = (*dirs, "/sys/module/nvidia_peermem")
    [r] = run_check("gpu.peermem", make_root(files, links, dirs2), live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT
    files["/etc/modprobe.d/peer.conf"] = "softdep nvidia post: nvidia-peermem\n"
    [r] = run_check("gpu.peermem", make_root(files, links, dirs2), live=True)
    assert r.status is Status.PASS
    [r] = run_check("gpu.peermem", make_root(files, links), live=True)
    assert r.status is Status.SKIP


def test_peermem_mentions_dmabuf_with_open_modules(make_root) -> None:
    files = {"/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX Open Kernel Module for "
             "x86_64  550.54.14  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Feb 22\n",
             "/proc/sys/kernel/osrelease": "6.1.0-18-amd64\n"}
    [r] = run_check("gpu.peermem", make_root(files, dirs=("/sys/class/infiniband/mlx5_0",)),
                    live=True)
    assert r.status is Status.FAIL and "DMA-BUF capable" in r.message
    files["/proc/sys/kernel/osrelease"] = "5.4.0-150-generic\n"
    [r] = run_check("gpu.peermem", make_root(files, dirs=("/sys/class/infiniband/mlx5_0",)),
                    live=True)
    assert "DMA-BUF capable" not in r.message
