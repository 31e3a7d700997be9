"""The amdgpu driver, ROCm releases and PyTorch ROCm builds of a root."""

from __future__ import annotations

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.amdgpu import stack
from tests.helpers import ROOTS
from tests.linux.kmod.test_modinfo import make_ko


def stanza(pkg: str, ver: str) -> str:
    return f"Package: {pkg}\nStatus: install ok installed\nVersion: {ver}\n\n"


@pytest.mark.parametrize(("version", "want"), [
    ("1:6.8.5.60202-2041575.22.04", ("6.8.5", "6.2.2")),
    ("6.12.12.60404-2202139.24.04", ("6.12.12", "6.4.4")),
    ("6.14.14.30100100-2204008.24.04", ("6.14.14", "30.10.1")),
    ("6.18.8.31200000-2295296.24.04", ("6.18.8", "31.20.0")),
    ("6.8.5-1", None), ("garbage", None)])
def test_dkms_package_version(version: str, want) -> None:
    assert stack.dkms_package_version(version) == want


def test_live_dkms_module_with_its_package() -> None:
    k = stack.kmd(Host(str(ROOTS / "amd-mi300x-good" / "root"), live=True))
    assert (k.kind, k.version, k.line, k.release) == ("dkms", "6.12.12", "6.4", "6.4.4")
    assert k.evidence.source == "/sys/module/amdgpu/version"
    assert k.display == "amdgpu 6.12.12 (driver of ROCm 6.4)"


def test_live_inbox_and_unloaded(make_root) -> None:
    k = stack.kmd(Host(str(ROOTS / "amd-radeon-workstation" / "root"), live=True))
    assert (k.kind, k.kernel) == ("inbox", "6.5.0-41-generic")
    k = stack.kmd(Host(str(make_root({"/proc/sys/kernel/osrelease": "6.8.0\n"})), live=True))
    assert k.kind == "none"


def test_offline_package_then_module_file_then_inbox(make_root) -> None:
    k = stack.kmd(Host(str(ROOTS / "amd-rocm-offline" / "root")))
    assert (k.kind, k.version, k.line, k.what) == ("dkms", "6.10.5", "6.3",
                                                   "package amdgpu-dkms")
    ko = {"/lib/modules/6.8.0-45-generic/updates/dkms/amdgpu.ko": make_ko("6.12.12"),
          "/lib/modules/6.8.0-45-generic/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst": b"x"}
    k = stack.kmd(Host(str(make_root(ko))))
    assert (k.kind, k.version, k.line) == ("dkms", "6.12.12", "6.4")
    assert k.evidence.source.endswith("updates/dkms/amdgpu.ko")
    inbox = {"/lib/modules/6.8.0-45-generic/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst":
             b"x"}
    k = stack.kmd(Host(str(make_root(inbox))))
    assert (k.kind, k.kernel) == ("inbox", "6.8.0-45-generic")
    assert stack.kmd(Host(str(make_root({})))).kind == "none"


def test_rocm_installs_default_and_package_fallback(make_root) -> None:
    root = make_root({"/opt/rocm-6.2.0/.info/version": "6.2.0-66\n",
                      "/opt/rocm-6.4.1/.info/version": "6.4.1-83\n",
                      "/opt/rocm-7.0.0/.info/version": "not a version\n",
                      "/opt/rocm-empty/README": "x"},
                     links={"/opt/rocm": "rocm-6.4.1"})
    got = {i.path: i for i in stack.rocm_installs(Host(str(root)))}
    assert set(got) == {"/opt/rocm-6.2.0", "/opt/rocm-6.4.1", "/opt/rocm-7.0.0"}
    assert got["/opt/rocm-6.4.1"].default and not got["/opt/rocm-6.2.0"].default
    assert got["/opt/rocm-7.0.0"].problem and got["/opt/rocm-7.0.0"].version is None
    pkg = make_root({"/var/lib/dpkg/status": stanza("rocm-core", "6.3.4.60304-76~22.04")})
    [i] = stack.rocm_installs(Host(str(pkg)))
    assert (i.version, i.path) == ("6.3.4", "package rocm-core")


def test_rocm_frameworks() -> None:
    [f] = stack.rocm_frameworks(Host(str(ROOTS / "amd-rocm-offline" / "root")),
                                venv_roots=("/opt/venvs",))
    assert (f.name, f.version, f.rocm) == ("torch", "2.2.0+rocm5.7", "5.7.31921-d1770ee1b")
