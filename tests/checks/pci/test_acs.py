"""``pci.acs``: no bridge above a GPU or HCA redirects peer-to-peer traffic."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.readiness_trees import DEV, config, gpu_host, pci
from tests.helpers import run_check


def test_acs_redirect_fails_unreadable_is_error(make_root) -> None:
    files, links = gpu_host()
    for i, acs in ((1, 0x1D), (2, 0x00)):
        pci(files, links, f"0000:00:0{i}.0", 0x8086, 0x060400, "16.0 GT/s PCIe", 16)
        files[f"{DEV}/0000:00:0{i}.0/config"] = config(acs)
        pci(files, links, f"0000:00:0{i}.0/0000:0{i}:00.0", 0x10DE, 0x030000,
            "16.0 GT/s PCIe", 16)
    got = {r.subject: r.status for r in run_check("pci.acs", make_root(files, links),
                                                  live=True)}
    assert got == {"GPU 0000:01:00.0": Status.FAIL, "GPU 0000:02:00.0": Status.PASS}
    files[f"{DEV}/0000:00:02.0/config"] = bytes(64)  # what a non-root reader gets
    got = {r.subject: r.status for r in run_check("pci.acs", make_root(files, links),
                                                  live=True)}
    assert got["GPU 0000:02:00.0"] is Status.ERROR


def test_amd_gpus_count_and_get_amd_advice(make_root) -> None:
    files: dict = {}
    links: dict = {}
    for i, acs in ((1, 0x1D), (2, 0x00)):
        pci(files, links, f"0000:00:0{i}.0", 0x1022, 0x060400, "32.0 GT/s PCIe", 16)
        files[f"{DEV}/0000:00:0{i}.0/config"] = config(acs)
        pci(files, links, f"0000:00:0{i}.0/0000:0{i}:00.0", 0x1002, 0x120000,
            "32.0 GT/s PCIe", 16)
    got = {r.subject: r for r in run_check("pci.acs", make_root(files, links), live=True)}
    assert got["GPU 0000:01:00.0"].status is Status.FAIL
    assert "amd-smi topology" in got["GPU 0000:01:00.0"].remediation.summary
    assert got["GPU 0000:02:00.0"].status is Status.PASS
    one = {k: v for k, v in files.items() if "0000:02:" not in k and "00:02.0" not in k}
    [r] = run_check("pci.acs", make_root(one, {k: v for k, v in links.items()
                                               if "0000:02:" not in k and "00:02.0" not in k}),
                    live=True)
    assert r.status is Status.SKIP and "1 GPU(s)" in r.message
