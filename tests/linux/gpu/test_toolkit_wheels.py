"""A CUDA toolkit assembled from NVIDIA's pip wheels (no ``version.json``): its version is
read from the wheels' dist-info, ``cuda.h`` or the ``nvcc`` banner, never by running
anything (issue 26, item 4).

The layouts are hand-made copies of what the wheels install (names checked against
``nvidia_cuda_runtime-13.0.96`` and ``nvidia_cuda_nvcc-13.0.88`` wheels: ``nvidia/cu13/bin/nvcc``,
``nvidia/cu13/include/cuda.h``; CUDA 12 wheels use ``nvidia/cuda_runtime`` and
``nvidia/cuda_nvcc`` with ``-cu12`` names), with only the version-bearing lines of the
NVIDIA files; the real toolkit of this kind on the build machine is read too where it
exists.
"""

from __future__ import annotations

import os

import pytest

from aiaudit.core.host import Host
from aiaudit.core.model import Status
from aiaudit.linux.gpu import cuda
from aiaudit.linux.gpu import stack as gs
from tests.checks.gpu.trees import by_subject, stack
from tests.helpers import run_check

CUDA_H = "/*\n * header\n */\n#ifndef __cuda_cuda_h__\n#define __cuda_cuda_h__\n" \
         "#define CUDA_VERSION 13000\n"
NVCC = (b"\x7fELF" + b"\0" * 5000 + b"Copyright (c) 2005-%s NVIDIA Corporation\n\0"
        b"Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.0\0"
        + b"\0" * 3000)


def _dist(prefix: str, name: str) -> dict[str, str]:
    return {f"{prefix}/{name}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\n"}


def _versions(root) -> dict[str, tuple[str | None, str | None, str | None]]:
    host = Host(str(root), live=False)
    return {t.path: (t.version.text if t.version else None,
                     t.evidence.source if t.evidence else None, t.problem)
            for t in gs.toolkits(host)}


def test_assembled_toolkit_with_dist_info_directory(make_root) -> None:
    """bin/, include/, lib/ and the wheels' dist-info under dist-info/ (no version.json)."""
    files = {"/usr/local/cuda-13.0/bin/nvcc": NVCC,
             "/usr/local/cuda-13.0/include/cuda.h": CUDA_H,
             **_dist("/usr/local/cuda-13.0/dist-info", "nvidia_cuda_runtime-13.0.96"),
             **_dist("/usr/local/cuda-13.0/dist-info", "nvidia_cuda_nvcc-13.0.88")}
    got = _versions(make_root(files, {"/usr/local/cuda": "cuda-13.0"}))
    version, source, problem = got["/usr/local/cuda-13.0"]
    assert (version, problem) == ("13.0", None)
    assert source == "usr/local/cuda-13.0/dist-info/nvidia_cuda_runtime-13.0.96.dist-info"


def test_cuda12_wheel_tree_linked_as_usr_local_cuda(make_root) -> None:
    """/usr/local/cuda -> <venv>/site-packages/nvidia/cuda_nvcc (CUDA 12 wheels): the
    dist-info two levels up names the release."""
    site = "/opt/venv/lib/python3.11/site-packages"
    files = {f"{site}/nvidia/cuda_nvcc/bin/nvcc": NVCC.replace(b"13.0", b"12.4"),
             **_dist(site, "nvidia_cuda_nvcc_cu12-12.4.131"),
             **_dist(site, "nvidia_cuda_runtime_cu12-12.4.127")}
    got = _versions(make_root(files, {"/usr/local/cuda": f"{site}/nvidia/cuda_nvcc"}))
    version, source, _ = got[f"{site}/nvidia/cuda_nvcc"]
    assert version == "12.4" and source.endswith("nvidia_cuda_runtime_cu12-12.4.127.dist-info")


def test_cuda_h_then_nvcc_banner(make_root) -> None:
    """Without dist-info: cuda.h's CUDA_VERSION; without that, the banner in nvcc (read,
    never run: the file here is not even executable)."""
    got = _versions(make_root({"/usr/local/cuda-13.0/include/cuda.h": CUDA_H,
                               "/usr/local/cuda-13.0/bin/nvcc": NVCC}))
    assert got["/usr/local/cuda-13.0"][:2] == ("13.0", "usr/local/cuda-13.0/include/cuda.h")
    got = _versions(make_root({"/usr/local/cuda-13.0/bin/nvcc": NVCC}))
    assert got["/usr/local/cuda-13.0"][:2] == ("13.0", "usr/local/cuda-13.0/bin/nvcc")


def test_nvcc_banner_across_read_chunks(make_root, monkeypatch) -> None:
    """The banner is found where it straddles two read chunks."""
    cut = len(b"\x7fELF" + b"\0" * 5000) + 60
    data = NVCC
    seen: list[int] = []

    def chunks(self, path, *, cap, chunk=1 << 20):
        seen.append(1)
        yield data[:cut]
        yield data[cut:]

    monkeypatch.setattr(Host, "read_chunks", chunks)
    got = _versions(make_root({"/usr/local/cuda-13.0/bin/nvcc": data}))
    assert got["/usr/local/cuda-13.0"][0] == "13.0" and seen


def test_nothing_says_the_version_is_an_error_naming_what_was_tried(make_root) -> None:
    got = _versions(make_root({"/usr/local/cuda-13.0/bin/nvcc": b"\x7fELF no banner"}))
    version, _, problem = got["/usr/local/cuda-13.0"]
    assert version is None and "dist-info" in problem and "nvcc banner" in problem


def test_cuda_driver_judges_the_wheel_toolkit(make_root) -> None:
    """The rule decides on it (CUDA 13.0 needs the 580 branch) instead of an error."""
    files = {"/usr/local/cuda-13.0/bin/nvcc": NVCC,
             **_dist("/usr/local/cuda-13.0/dist-info", "nvidia_cuda_runtime-13.0.96")}
    res = by_subject(run_check("gpu.cuda_driver", stack(make_root, files=files)))
    r = res["CUDA 13.0 (/usr/local/cuda-13.0)"]
    assert r.status is Status.FAIL and r.expected == ">= 580"
    res = by_subject(run_check("gpu.cuda_driver", stack(
        make_root, module="580.95.05", lib="580.95.05", files=files)))
    assert res["CUDA 13.0 (/usr/local/cuda-13.0)"].status is Status.PASS


def test_parsers() -> None:
    assert cuda.parse_cuda_h("#define CUDA_VERSION 12040\n").text == "12.4"
    assert cuda.parse_cuda_h("  #  define CUDA_VERSION 11080 /* x */\n").text == "11.8"
    with pytest.raises(Exception, match="CUDA_VERSION"):
        cuda.parse_cuda_h("#define CUDART_VERSION 12040\n")
    assert cuda.nvcc_banner(b"xx Cuda compilation tools, release 10.2, V10.2.89\n").text \
        == "10.2"
    assert cuda.nvcc_banner(b"no banner") is None
    assert cuda.wheel_release("nvidia-cuda-runtime-cu11", "11.8.89").text == "11.8"
    assert cuda.wheel_release("nvidia-cublas-cu12", "12.4.5.8") is None


@pytest.mark.skipif(not os.path.isdir("/usr/local/cuda-13.0/dist-info"),
                    reason="no pip-wheel CUDA toolkit at /usr/local/cuda-13.0 here")
def test_the_real_wheel_toolkit_of_this_machine() -> None:
    """Where the build machine has a toolkit assembled from NVIDIA's 13.0 wheels: read as
    13.0 from its files, and cuda.h and nvcc agree."""
    [t] = [t for t in gs.toolkits(Host("/", live=False)) if t.path == "/usr/local/cuda-13.0"]
    assert t.version is not None and t.version.text == "13.0" and t.problem is None
    with open("/usr/local/cuda-13.0/include/cuda.h") as f:
        assert cuda.parse_cuda_h(f.read()).text == "13.0"
    with open("/usr/local/cuda-13.0/bin/nvcc", "rb") as fb:
        banner = cuda.nvcc_banner(fb.read())
    assert banner is not None and banner.text == "13.0"
