"""What every ``gpu.*`` rule shares (:mod:`aiaudit.linux.gpu.driver`): the gate when there
is no GPU and no driver, and the driver installation per distribution."""

from __future__ import annotations

import pytest

from aiaudit.core.host import Host
from aiaudit.core.model import Status
from aiaudit.linux.gpu import driver
from tests.checks.gpu.trees import LDCONF, ML, ROCKY, UBUNTU, stack, toolkit
from tests.helpers import run_check


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


def test_no_gpu_skips(make_root) -> None:
    for check in ("gpu.nouveau", "gpu.uvm", "gpu.peermem", "iommu.passthrough"):
        [r] = run_check(check, make_root({"/etc/os-release": "ID=debian\n"}))
        assert r.status is Status.SKIP, check


@pytest.mark.parametrize(("osr", "family"), [
    ("ID=ubuntu\nID_LIKE=debian\n", "ubuntu"), ("ID=debian\n", "debian"),
    ("ID=linuxmint\nID_LIKE=\"ubuntu debian\"\n", "ubuntu"),
    (ROCKY, "rhel"), ("ID=fedora\n", "rhel"), ('ID="ol"\nID_LIKE="fedora"\n', "rhel"),
    ('ID="sles"\nID_LIKE="suse"\n', "suse"), ("ID=opensuse-leap\n", "suse"),
    ("ID=arch\n", "other"), ("", "other"),
])
def test_distro(make_root, osr: str, family: str) -> None:
    assert driver.distro(Host(str(make_root({"/etc/os-release": osr})))) == family


def test_schema_has_require_gpu() -> None:
    s = driver.schema({"min_count": {"type": "integer"}})
    assert s["additionalProperties"] is False
    assert set(s["properties"]) == {"require_gpu", "min_count"}
    assert s["properties"]["require_gpu"]["default"] is False
