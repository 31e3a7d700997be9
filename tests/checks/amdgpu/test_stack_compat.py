"""``amdgpu.stack_compat``: the driver supports each ROCm user space (AMD's matrix)."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.amdgpu.trees import amd_node
from tests.helpers import ROOTS, run_check


def stanza(pkg: str, ver: str) -> str:
    return f"Package: {pkg}\nStatus: install ok installed\nVersion: {ver}\n\n"


def test_supported_and_unsupported_user_spaces(make_root) -> None:
    files, links = amd_node(1, module="6.8.5", rocm="6.4.1-83")  # the ROCm 6.2 driver
    files["/opt/rocm-5.5.0/.info/version"] = "5.5.0-74\n"
    got = {r.subject: r for r in run_check("amdgpu.stack_compat", make_root(files, links),
                                           live=True)}
    assert got["ROCm 6.4.1-83 (/opt/rocm-6.4.1)"].status is Status.PASS
    bad = got["ROCm 5.5.0-74 (/opt/rocm-5.5.0)"]
    assert bad.status is Status.FAIL and "6.0, 6.1, 6.2, 6.3, 6.4" in bad.message
    assert any("amd_rocm.json" in e.source for e in bad.evidence)
    assert "5.5" in bad.remediation.summary and "5.7" in bad.remediation.summary


def test_offline_framework_against_the_package_driver() -> None:
    got = {r.subject: r.status for r in run_check(
        "amdgpu.stack_compat", ROOTS / "amd-rocm-offline" / "root")}
    assert Status.FAIL in got.values() and Status.PASS in got.values()


def test_drivers_that_cannot_be_judged(make_root) -> None:
    files, links = amd_node(1, module=None)  # the in-kernel driver: no version file
    files["/sys/module/amdgpu/initstate"] = "live\n"
    [r] = run_check("amdgpu.stack_compat", make_root(files, links), live=True)
    assert r.status is Status.SKIP and "in-kernel" in r.message
    files, links = amd_node(1, module="6.99.1")
    [r] = run_check("amdgpu.stack_compat", make_root(files, links), live=True)
    assert r.status is Status.SKIP and "not in AMD's table" in r.message
    files, links = amd_node(1, module=None)
    [r] = run_check("amdgpu.stack_compat", make_root(files, links), live=True)
    assert r.status is Status.FAIL and "not loaded" in r.message


def test_new_scheme_driver_package(make_root) -> None:
    root = make_root({"/var/lib/dpkg/status": stanza("amdgpu-dkms",
                                                     "1:6.14.14.30100100-2204008.24.04")
                      + stanza("rocm-core", "7.0.1.70001-42~24.04")})
    [r] = run_check("amdgpu.stack_compat", root)
    assert r.status is Status.PASS and "AMD GPU Driver 30.10" in r.message


def test_not_an_amd_root(make_root) -> None:
    [r] = run_check("amdgpu.stack_compat", make_root({"/etc/os-release": "ID=debian\n"}))
    assert r.status is Status.SKIP and "AMD GPU rules do not apply" in r.message
