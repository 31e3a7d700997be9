"""``gpu.driver_match``: kernel module and user-space driver libraries agree."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.checks.gpu.trees import ML, PROC, ROCKY, stack
from tests.helpers import run_check


def test_match_pass_offline(make_root) -> None:
    root = stack(make_root)
    res = run_check("gpu.driver_match", root)
    assert [r.status for r in res] == [Status.PASS, Status.PASS]
    assert res[0].aspect is Aspect.PERSISTED
    assert any("nvidia.ko" in e.source for e in res[0].evidence)


def test_match_fail_offline_names_dkms(make_root) -> None:
    root = stack(make_root, module="535.104.05", lib="535.129.03", osr=ROCKY)
    res = run_check("gpu.driver_match", root)
    assert {r.status for r in res} == {Status.FAIL}
    rem = res[0].remediation
    assert rem and "dkms autoinstall -k 6.1.0-18-amd64" in rem.summary
    assert "nvidia-driver:535-dkms" in rem.snippets[0].content


def test_match_live_mismatch_and_sys_module_fallback(make_root) -> None:
    root = stack(make_root, module=None, lib="550.54.15",
                 files={"/proc/driver/nvidia/version": PROC.format(v="535.129.03")})
    res = run_check("gpu.driver_match", root, live=True)
    assert res[0].status is Status.FAIL and res[0].aspect is Aspect.RUNTIME
    assert "Driver/library version mismatch" in res[0].message
    assert "rmmod" in res[0].remediation.snippets[0].content
    root = stack(make_root, module=None, lib="570.26",
                 files={"/sys/module/nvidia/version": "570.26\n"})
    res = run_check("gpu.driver_match", root, live=True)
    assert res[0].status is Status.PASS
    assert res[0].evidence[0].source == "/sys/module/nvidia/version"


def test_match_xz_module_and_stray_library(make_root) -> None:
    stray = {"/usr/lib64/libcuda.so.470.223.02": b"x"}
    root = stack(make_root, ko_name="nvidia.ko.xz", files=stray)
    res = run_check("gpu.driver_match", root)
    assert res[0].status is Status.PASS
    assert "/usr/lib64/libcuda.so.470.223.02" in res[0].message


def test_match_zstd_module_falls_back_to_package_db(make_root) -> None:
    dpkg = ("Package: nvidia-dkms-535\nStatus: install ok installed\n"
            "Version: 535.129.03-0ubuntu0.22.04.1\n\n")
    root = stack(make_root, module=None, files={
        "/lib/modules/6.8.0-31-generic/updates/dkms/nvidia.ko.zst": b"\x28\xb5\x2f\xfdjunk",
        "/var/lib/dpkg/status": dpkg})
    res = run_check("gpu.driver_match", root)
    try:
        import compression.zstd  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        assert res[0].status is Status.PASS
        assert "nvidia-dkms-535" in res[0].evidence[0].value
    else:  # pragma: no cover - Python >= 3.14 reads it and finds it corrupt
        assert res


def test_match_dkms_without_module_and_library_without_module(make_root) -> None:
    dpkg = ("Package: nvidia-dkms-550\nStatus: install ok installed\nVersion: 550.54.15-1\n\n")
    root = stack(make_root, module=None, lib="550.54.15", files={
        "/lib/modules/6.1.0-18-amd64/modules.dep": "", "/var/lib/dpkg/status": dpkg})
    res = run_check("gpu.driver_match", root)
    assert res[0].status is Status.PASS and "DKMS build missing" in str(res)
    root = stack(make_root, module=None, lib="550.54.15")
    res = run_check("gpu.driver_match", root)
    assert res[0].status is Status.FAIL and "no nvidia kernel module" in res[0].message


def test_match_module_without_libraries(make_root) -> None:
    res = run_check("gpu.driver_match", stack(make_root, lib=None))
    assert res[0].status is Status.FAIL and res[0].subject == "libcuda.so"


def test_match_gpu_present_module_not_loaded(make_root) -> None:
    root = stack(make_root, module=None, lib="550.54.15", files={
        "/sys/bus/pci/devices/0000:07:00.0/vendor": "0x10de\n",
        "/sys/bus/pci/devices/0000:07:00.0/class": "0x030200\n"})
    res = run_check("gpu.driver_match", root, live=True)
    assert res[0].status is Status.FAIL and "not loaded" in res[0].message


def test_unreadable_proc_version_is_an_error(make_root) -> None:
    root = stack(make_root, module=None, lib="550.54.15", files={
        "/proc/driver/nvidia/version": "NVRM version: garbage\n"})
    res = run_check("gpu.driver_match", root, live=True)
    assert res[0].status is Status.ERROR and "unrecognised" in res[0].message


def test_match_no_module_names_the_libraries_and_where_modules_were_looked_for(make_root
                                                                              ) -> None:
    from aiaudit.linux.gpu.stack import MODULE_BASES, MODULE_DIRS

    root = stack(make_root, module=None, lib="550.54.15",
                 files={"/lib/modules/6.1.0-18-amd64/modules.dep": ""})
    [r] = run_check("gpu.driver_match", root)
    assert r.status is Status.FAIL and "no nvidia kernel module" in r.message
    files = [(e.path, e.value) for e in r.evidence if e.kind == "file"]
    assert files == [(f"{ML}/libcuda.so.550.54.15", "550.54.15"),
                     (f"{ML}/libnvidia-ml.so.550.54.15", "550.54.15")]
    [d] = [e for e in r.evidence if e.kind == "default"]
    assert all(sub in d.source for sub in MODULE_DIRS)
    assert all(f"{b.lstrip('/')}/<kernel>" in d.source for b in MODULE_BASES)
    assert d.value == "none for kernel 6.1.0-18-amd64"


def test_match_package_only_points_at_the_package_database(make_root) -> None:
    dpkg = ("Package: libnvidia-compute-535\nStatus: install ok installed\n"
            "Version: 535.161.08-0ubuntu1\n\n")
    root = stack(make_root, module=None, lib=None, files={"/var/lib/dpkg/status": dpkg})
    [r] = run_check("gpu.driver_match", root)
    assert r.status is Status.FAIL
    pkg, where = r.evidence
    assert (pkg.kind, pkg.path) == ("file", "/var/lib/dpkg/status")
    assert "libnvidia-compute-535" in pkg.value
    assert where.kind == "default" and where.value == "no kernel installed"


def test_match_unreadable_module_file_is_the_errors_evidence(make_root) -> None:
    ko = "/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko"
    root = stack(make_root, module=None, files={ko: b"not an ELF file"})
    [r] = run_check("gpu.driver_match", root)
    assert r.status is Status.ERROR and "cannot be read" in r.message
    assert [(e.kind, e.path) for e in r.evidence] == [("file", ko)]
