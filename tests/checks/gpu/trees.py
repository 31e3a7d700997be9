"""Roots with parts of the NVIDIA stack (module file, driver libraries, toolkits, framework
builds), as ``make_root`` file dicts, for the ``gpu.*`` check tests."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

from tests.linux.kmod.test_modinfo import make_ko

ML = "/usr/lib/x86_64-linux-gnu"
LDCONF = {"/etc/ld.so.conf": "include /etc/ld.so.conf.d/*.conf\n",
          "/etc/ld.so.conf.d/x86_64-linux-gnu.conf": f"/lib/x86_64-linux-gnu\n{ML}\n"}
UBUNTU = "ID=ubuntu\nID_LIKE=debian\nVERSION_ID=22.04\n"
ROCKY = 'ID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\n'
UNIT = "[Service]\nExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced\n"
PROC = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Thu Oct 19 18:56:32 UTC 2023\n"
        "GCC version:  gcc version 12.2.0\n")


def libs(version: str, d: str = ML) -> tuple[dict[str, bytes], dict[str, str]]:
    """Files and soname links of the user-space driver libraries."""
    files = {f"{d}/{s}.{version}": b"\x7fELF" for s in ("libcuda.so", "libnvidia-ml.so")}
    links = {f"{d}/{s}.1": f"{s}.{version}" for s in ("libcuda.so", "libnvidia-ml.so")}
    return files, links


def stack(make_root, *, module: str | None = "535.129.03", lib: str | None = "535.129.03",
          files: dict | None = None, links: dict | None = None, osr: str = UBUNTU,
          ko_name: str = "nvidia.ko") -> Path:
    """A root with a module file, libraries and whatever else is given."""
    f: dict = {**LDCONF, "/etc/os-release": osr, **(files or {})}
    ln: dict = dict(links or {})
    if module:
        data = make_ko(module)
        if ko_name.endswith(".xz"):
            data = lzma.compress(data)
        f[f"/lib/modules/6.1.0-18-amd64/updates/dkms/{ko_name}"] = data
    if lib:
        lf, ll = libs(lib)
        f.update(lf)
        ln.update(ll)
    return make_root(f, ln)


def toolkit(version: str, name: str | None = None) -> dict[str, str]:
    """version.json of a toolkit."""
    d = name or "cuda-" + ".".join(version.split(".")[:2])
    return {f"/usr/local/{d}/version.json": json.dumps({"cuda": {"version": version}})}


def torch(site: str, version: str, cuda: str | None, hip: str | None = None) -> dict[str, str]:
    """torch/version.py (and an __init__ that must never run)."""
    return {f"{site}/torch/version.py": f"__version__ = {version!r}\ncuda = {cuda!r}\n"
                                         f"hip = {hip!r}\n",
            f"{site}/torch/__init__.py": "raise SystemExit('imported!')\n"}


def by_subject(results) -> dict:
    return {r.subject: r for r in results}
