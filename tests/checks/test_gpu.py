"""``gpu.*`` checks: driver/library match, driver vs CUDA, forward compat, persistence,
GPU count; nothing from the scanned root is ever run or imported."""

from __future__ import annotations

import json
import lzma
import os
import time
from pathlib import Path

import pytest

from aiaudit.api import CheckContext
from aiaudit.core import host as host_mod
from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Status
from tests.helpers import ROOTS, run_check
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


# ------------------------------------------------------------------ driver/library match
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


def test_no_gpu_skips_or_fails(make_root) -> None:
    root = make_root({**LDCONF, "/etc/os-release": ROCKY})
    for check in ("gpu.driver_match", "gpu.cuda_driver", "gpu.forward_compat",
                  "gpu.persistence", "gpu.count"):
        res = run_check(check, root)
        assert [r.status for r in res] == [Status.SKIP], check
        assert "no NVIDIA driver" in res[0].message
        res = run_check(check, root, {"require_gpu": True})
        assert [r.status for r in res] == [Status.FAIL], check
        assert "dnf module install" in res[0].remediation.snippets[0].content


# ------------------------------------------------------------------ driver vs CUDA
def test_cuda_toolkits_minor_compat_and_release(make_root) -> None:
    files = {**toolkit("13.0.2"), **toolkit("12.4.1"), **toolkit("11.8.20220929")}
    root = stack(make_root, files=files, links={"/usr/local/cuda": "cuda-13.0"})
    minor = by_subject(run_check("gpu.cuda_driver", root))
    assert minor["CUDA 13.0.2 (/usr/local/cuda-13.0)"].status is Status.FAIL
    assert "/usr/local/cuda default" in minor["CUDA 13.0.2 (/usr/local/cuda-13.0)"].message
    assert minor["CUDA 12.4.1 (/usr/local/cuda-12.4)"].status is Status.PASS
    assert minor["CUDA 11.8 (/usr/local/cuda-11.8)"].status is Status.PASS
    rel = by_subject(run_check("gpu.cuda_driver", root, {"table": "release"}))
    r = rel["CUDA 12.4.1 (/usr/local/cuda-12.4)"]
    assert r.status is Status.FAIL and r.expected == ">= 550.54.15"
    assert "nvidia-driver-550-server" in r.remediation.snippets[0].content


def test_cuda_version_txt_and_unknown_major(make_root) -> None:
    files = {"/usr/local/cuda-10.2/version.txt": "CUDA Version 10.2.89\n",
             **toolkit("14.0.0")}
    res = by_subject(run_check("gpu.cuda_driver", stack(make_root, files=files)))
    assert res["CUDA 10.2 (/usr/local/cuda-10.2)"].status is Status.PASS
    assert res["CUDA 10.2 (/usr/local/cuda-10.2)"].expected == ">= 440.33"
    bad = res["CUDA 14.0.0 (/usr/local/cuda-14.0)"]
    assert bad.status is Status.ERROR and "cuda_drivers.json" in bad.message


def test_cuda_broken_version_json_is_error(make_root) -> None:
    res = run_check("gpu.cuda_driver", stack(make_root, files={
        "/usr/local/cuda-12.2/version.json": "{not json"}))
    assert res[0].status is Status.ERROR


def test_torch_cu121_on_470_fails(make_root) -> None:
    site = "/home/alice/miniconda3/envs/train/lib/python3.11/site-packages"
    root = stack(make_root, module="470.223.02", lib="470.223.02",
                 files=torch(site, "2.3.0+cu121", "12.1"))
    res = run_check("gpu.cuda_driver", root)
    assert len(res) == 1 and res[0].status is Status.FAIL
    assert res[0].subject == f"torch 2.3.0+cu121 ({site})"
    assert res[0].expected == ">= 525.60.13"


def test_torch_named_env_and_venv_roots(make_root) -> None:
    files = {**torch("/srv/envs/a/lib/python3.12/site-packages", "2.5.0+cu124", "12.4"),
             **torch("/data/venvs/b/lib/python3.10/site-packages", "2.0.1+cu117", "11.7")}
    root = stack(make_root, files=files)
    assert run_check("gpu.cuda_driver", root)[0].status is Status.SKIP  # not found by default
    res = by_subject(run_check("gpu.cuda_driver", root, {
        "python_envs": ["/srv/envs/a"], "venv_roots": ["/data/venvs"], "table": "release"}))
    assert {r.status for r in res.values()} == {Status.PASS, Status.FAIL}
    fail = next(r for r in res.values() if r.status is Status.FAIL)
    assert "2.5.0+cu124" in fail.subject and fail.expected == ">= 550.54.14"


def test_cpu_and_rocm_builds_skip(make_root) -> None:
    files = {**torch("/opt/venvs/c/lib/python3.11/site-packages", "2.3.0+cpu", None),
             **torch("/opt/venvs/r/lib/python3.11/site-packages", "2.3.0+rocm6.0", None,
                     "6.0.32830")}
    res = run_check("gpu.cuda_driver", stack(make_root, files=files))
    assert [r.status for r in res] == [Status.SKIP, Status.SKIP]
    assert "CPU-only" in res[0].message and "ROCm" in res[1].message


def test_offline_image_without_driver_skips(make_root) -> None:
    files = {**LDCONF, **toolkit("12.4.1"),
             **torch("/usr/local/lib/python3.10/dist-packages", "2.3.0+cu121", "12.1")}
    res = run_check("gpu.cuda_driver", make_root(files))
    assert res[0].status is Status.SKIP and "container image" in res[0].message


def test_nothing_needs_a_driver(make_root) -> None:
    res = run_check("gpu.cuda_driver", stack(make_root))
    assert res[0].status is Status.SKIP and "nothing needs a driver" in res[0].message


# ------------------------------------------------------------------ forward compatibility
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


# ------------------------------------------------------------------ persistence
def _persist_root(make_root, enabled: bool, extra: dict | None = None) -> Path:
    links = {}
    if enabled:
        links["/etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service"] = \
            "/lib/systemd/system/nvidia-persistenced.service"
    return stack(make_root, files={"/lib/systemd/system/nvidia-persistenced.service": UNIT,
                                   **(extra or {})}, links=links)


def test_persistence_offline(make_root) -> None:
    res = run_check("gpu.persistence", _persist_root(make_root, True))
    assert res[0].status is Status.PASS and res[0].aspect is Aspect.PERSISTED
    res = run_check("gpu.persistence", _persist_root(make_root, False))
    assert res[0].status is Status.FAIL
    kinds = {s.kind: s.content for s in res[0].remediation.snippets}
    assert kinds["enable"] == "nvidia-persistenced.service"
    assert kinds["command"] == "systemctl start nvidia-persistenced"
    dropin = {"/etc/systemd/system/nvidia-persistenced.service.d/no.conf":
              "[Service]\nExecStart=\nExecStart=/usr/bin/nvidia-persistenced "
              "--no-persistence-mode\n"}
    res = run_check("gpu.persistence", _persist_root(make_root, True, dropin))
    assert res[0].status is Status.FAIL and "--no-persistence-mode" in res[0].message
    res = run_check("gpu.persistence", stack(make_root))
    assert res[0].status is Status.FAIL and "not installed" in res[0].message
    assert "nvidia-compute-utils-535-server" in res[0].remediation.snippets[0].content


def test_nvidia_smi_in_root_is_never_run() -> None:
    marker = Path("/tmp/aiaudit-ran-fixture-nvidia-smi")
    marker.unlink(missing_ok=True)
    root = ROOTS / "gpu-nvidia-smi-in-root" / "root"
    assert os.access(root / "usr/bin/nvidia-smi", os.X_OK)
    t0 = time.monotonic()
    res = run_check("gpu.persistence", root, live=True)
    assert time.monotonic() - t0 < 5
    assert res[0].status is Status.FAIL and "only when scanning the real /" in res[0].message
    assert not marker.exists()


def _fake_smi(tmp_path: Path, monkeypatch, body: str) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + body)
    smi.chmod(0o755)
    monkeypatch.setattr(host_mod, "TRUSTED_BIN_DIRS", (str(bindir),))
    # this machine has no GPU: let the rule apply as on a GPU node
    monkeypatch.setattr("aiaudit.checks.legacy_gpu.gate", lambda *a, **k: None)


def _live_persistence(params: dict | None = None):
    from aiaudit.core import plugins
    from aiaudit.core.ruleset import _with_defaults

    spec = plugins.registry().checks["gpu.persistence"]
    ctx = CheckContext(host=Host("/"), params=_with_defaults(dict(params or {}),
                                                             spec.params_schema))
    return list(spec.run(ctx))


def test_hanging_nvidia_smi_is_an_error_not_a_hang(tmp_path, monkeypatch) -> None:
    pidfile = tmp_path / "pid"
    _fake_smi(tmp_path, monkeypatch, f"echo $$ > {pidfile}\nexec /bin/sleep 60\n")
    t0 = time.monotonic()
    res = _live_persistence({"timeout": 1})
    took = time.monotonic() - t0
    assert took < 5, took
    assert [r.status for r in res] == [Status.ERROR]
    assert "timed out" in res[0].message
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the whole process group was killed


def test_live_nvidia_smi_output(tmp_path, monkeypatch) -> None:
    _fake_smi(tmp_path, monkeypatch, "echo '0, 00000000:07:00.0, Disabled'\n"
                                     "echo '1, 00000000:0F:00.0, Enabled'\n")
    res = by_subject(_live_persistence())
    assert res["GPU 0 (00000000:07:00.0)"].status is Status.FAIL
    assert res["GPU 0 (00000000:07:00.0)"].aspect is Aspect.RUNTIME
    # this machine has no nvidia-persistenced enabled: on now, lost at reboot
    assert res["GPU 1 (00000000:0F:00.0)"].aspect is Aspect.DRIFT
    res = by_subject(_live_persistence({"persist": False}))
    assert res["GPU 1 (00000000:0F:00.0)"].status is Status.PASS


def test_nvidia_smi_failing_or_missing(tmp_path, monkeypatch) -> None:
    _fake_smi(tmp_path, monkeypatch, "echo \"NVIDIA-SMI has failed because it couldn't "
                                     "communicate with the NVIDIA driver.\"\nexit 9\n")
    res = _live_persistence()
    assert res[0].status is Status.ERROR and "exited 9" in res[0].message
    monkeypatch.setattr(host_mod, "TRUSTED_BIN_DIRS", (str(tmp_path / "empty"),))
    res = _live_persistence()
    assert res[0].status is Status.ERROR and "not installed" in res[0].message


# ------------------------------------------------------------------ GPU count
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


# ------------------------------------------------------------------ rpm database
def _rpmdb(tmp_path: Path, packages: list[tuple[str, str, str, int | None]]) -> bytes:
    import sqlite3

    from tests.linux.packages.test_rpm import make_header

    path = tmp_path / "rpmdb.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")  # as rpm >= 4.16 leaves it
    conn.execute("CREATE TABLE Packages (hnum INTEGER PRIMARY KEY AUTOINCREMENT, blob BLOB "
                 "NOT NULL)")
    conn.executemany("INSERT INTO Packages (blob) VALUES (?)",
                     [(make_header(*p),) for p in packages])
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path.read_bytes()


@pytest.mark.skipif(not hasattr(__import__("sqlite3").Connection, "deserialize"),
                    reason="sqlite3 deserialize needs Python >= 3.11")
def test_rpm_database_gives_module_version(make_root, tmp_path) -> None:
    db = _rpmdb(tmp_path, [("bash", "5.1.8", "9.el9", None),
                           ("kmod-nvidia-latest-dkms", "550.54.15", "1.el9", 3),
                           ("nvidia-driver-cuda-libs", "550.54.15", "1.el9", 3)])
    assert db[18:20] == b"\x02\x02"  # WAL mode on disk
    root = stack(make_root, module=None, lib="550.54.15", osr=ROCKY,
                 files={"/var/lib/rpm/rpmdb.sqlite": db})
    res = run_check("gpu.driver_match", root)
    assert res[0].status is Status.PASS
    assert res[0].evidence[0].source == "var/lib/rpm/rpmdb.sqlite"
    assert "3:550.54.15-1.el9" in res[0].evidence[0].value
    root = stack(make_root, module=None, lib="535.129.03", osr=ROCKY,
                 files={"/var/lib/rpm/rpmdb.sqlite": db})
    assert run_check("gpu.driver_match", root)[0].status is Status.FAIL
    garbage = stack(make_root, module=None, lib="535.129.03", osr=ROCKY,
                    files={"/var/lib/rpm/rpmdb.sqlite": b"SQLite format 3\0" + b"\xff" * 200})
    assert run_check("gpu.driver_match", garbage)[0].status is Status.FAIL  # no module at all


# ------------------------------------------------------------------ odds and ends
@pytest.mark.parametrize("osr,expect", [
    ("ID=debian\nVERSION_ID=12\n", "apt-get install cuda-drivers-580"),
    ('ID="sles"\nID_LIKE="suse"\n', "zypper install cuda-drivers-580"),
    ("ID=ubuntu\nID_LIKE=debian\n", "apt-get install nvidia-driver-580-server"),
    ('ID="rocky"\nID_LIKE="rhel centos fedora"\n', "nvidia-driver:580-dkms"),
])
def test_remediation_names_package_per_distro(make_root, osr: str, expect: str) -> None:
    root = stack(make_root, osr=osr, files=toolkit("13.0.0"))
    res = run_check("gpu.cuda_driver", root)
    assert res[0].status is Status.FAIL
    assert expect in res[0].remediation.snippets[0].content
    root = stack(make_root, osr="ID=arch\n", files=toolkit("13.0.0"))
    rem = run_check("gpu.cuda_driver", root)[0].remediation
    assert not rem.snippets and "cuda-drivers-580" in rem.summary


def test_newer_runtime_wheel_raises_the_release_requirement(make_root) -> None:
    site = "/usr/local/lib/python3.10/dist-packages"
    files = {**torch(site, "2.3.0+cu121", "12.1"),
             f"{site}/nvidia_cuda_runtime_cu12-12.4.127.dist-info/METADATA": "x"}
    res = run_check("gpu.cuda_driver", stack(make_root, files=files), {"table": "release"})
    assert res[0].status is Status.FAIL and res[0].expected == ">= 550.54.14"


def test_unreadable_proc_version_is_an_error(make_root) -> None:
    root = stack(make_root, module=None, lib="550.54.15", files={
        "/proc/driver/nvidia/version": "NVRM version: garbage\n"})
    res = run_check("gpu.driver_match", root, live=True)
    assert res[0].status is Status.ERROR and "unrecognised" in res[0].message


def test_broken_torch_version_py_is_an_error(make_root) -> None:
    site = "/usr/lib/python3/dist-packages"
    res = run_check("gpu.cuda_driver", stack(make_root, files={
        f"{site}/torch/version.py": "cuda = '12.1'\n"}))
    assert res[0].status is Status.ERROR and "__version__" in res[0].message


def test_conda_in_home_directories(make_root) -> None:
    site = "/home/bob/miniforge3/envs/llm/lib/python3.11/site-packages"
    root = stack(make_root, module="470.223.02", lib="470.223.02",
                 files=torch(site, "2.4.0+cu124", "12.4"))
    res = run_check("gpu.cuda_driver", root)
    assert res[0].status is Status.FAIL and site in res[0].subject
    res = run_check("gpu.cuda_driver", root, {"search_homes": False})
    assert res[0].status is Status.SKIP


# ------------------------------------------------------------------ evidence when nothing decides
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


def test_persistence_not_installed_says_where_the_unit_was_looked_for(make_root) -> None:
    from aiaudit.linux.systemd.units import UNIT_DIRS

    [r] = run_check("gpu.persistence", stack(make_root))
    assert r.status is Status.FAIL and "is not installed" in r.message
    [e] = r.evidence
    assert e.kind == "default" and e.value == "not installed"
    assert e.source.startswith("unit nvidia-persistenced.service in ")
    assert all(d.lstrip("/") in e.source for d in UNIT_DIRS)


def test_persistence_masked_and_disabled_are_file_evidence(make_root) -> None:
    masked = stack(make_root, links={
        "/etc/systemd/system/nvidia-persistenced.service": "/dev/null"},
        files={"/lib/systemd/system/nvidia-persistenced.service": UNIT})
    [r] = run_check("gpu.persistence", masked)
    assert r.status is Status.FAIL and "masked" in r.message
    assert [(e.kind, e.path) for e in r.evidence] == [
        ("file", "/etc/systemd/system/nvidia-persistenced.service")]
    [r] = run_check("gpu.persistence", _persist_root(make_root, False))
    assert r.status is Status.FAIL
    assert [(e.kind, e.path) for e in r.evidence] == [
        ("file", "/lib/systemd/system/nvidia-persistenced.service")]


def test_required_gpu_absent_says_where_the_driver_was_looked_for(make_root) -> None:
    dpkg = "Package: bash\nStatus: install ok installed\nVersion: 5.2-1\n\n"
    root = make_root({**LDCONF, "/etc/os-release": UBUNTU, "/var/lib/dpkg/status": dpkg},
                     dirs=(ML,))
    [r] = run_check("gpu.persistence", root, {"require_gpu": True})
    assert r.status is Status.FAIL
    modules, libs, db = r.evidence
    assert modules.kind == "default" and modules.value == "no kernel installed"
    assert libs.kind == "default" and libs.value == "none found"
    assert "libcuda.so.<version> or libnvidia-ml.so.<version>" in libs.source
    assert "usr/lib/x86_64-linux-gnu" in libs.source
    assert (db.kind, db.path) == ("file", "/var/lib/dpkg/status")
    [r] = run_check("gpu.driver_match", make_root({"/etc/os-release": ROCKY}),
                    {"require_gpu": True})
    assert "no directory exists of etc/ld.so.conf's and " in r.evidence[1].source
    assert r.evidence[-1].kind == "default" and r.evidence[-1].value == "no such file"
    assert r.evidence[-1].source.startswith("package databases: var/lib/dpkg/status")


def test_match_unreadable_module_file_is_the_errors_evidence(make_root) -> None:
    ko = "/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko"
    root = stack(make_root, module=None, files={ko: b"not an ELF file"})
    [r] = run_check("gpu.driver_match", root)
    assert r.status is Status.ERROR and "cannot be read" in r.message
    assert [(e.kind, e.path) for e in r.evidence] == [("file", ko)]
