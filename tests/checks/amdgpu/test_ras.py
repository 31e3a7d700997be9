"""``amdgpu.ras_errors`` and ``amdgpu.bad_pages`` on small trees."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.amdgpu.trees import DEV, amd_node
from tests.helpers import run_check

RAS = f"{DEV}/0000:10:00.0/ras"


def test_uncorrectable_and_deferred(make_root) -> None:
    files, links = amd_node(1)
    files[f"{RAS}/umc_err_count"] = "ue: 0\nce: 12\n"
    [r] = run_check("amdgpu.ras_errors", make_root(files, links), live=True)
    assert r.status is Status.PASS and "12 correctable" in r.message
    files[f"{RAS}/aca_gfx"] = "ue: 0\nce: 0\nde: 2\n"
    [r] = run_check("amdgpu.ras_errors", make_root(files, links), live=True)
    assert r.status is Status.FAIL and "gfx 2" in r.message
    assert r.evidence[0].source.endswith("ras/aca_gfx")
    [r] = run_check("amdgpu.ras_errors", make_root(files, links), {"count_deferred": False},
                    live=True)
    assert r.status is Status.PASS


def test_reset_in_progress_and_garbage(make_root) -> None:
    files, links = amd_node(1)
    files[f"{RAS}/umc_err_count"] = "Query currently inaccessible\n"
    [r] = run_check("amdgpu.ras_errors", make_root(files, links), live=True)
    assert r.status is Status.ERROR and "reset" in r.message
    files[f"{RAS}/umc_err_count"] = "\x00\x01"
    [r] = run_check("amdgpu.ras_errors", make_root(files, links), live=True)
    assert r.status is Status.ERROR and r.evidence


def test_bad_pages_threshold_pending_and_param(make_root) -> None:
    files, links = amd_node(1)
    files[f"{RAS}/gpu_vram_bad_pages"] = "".join(
        f"0x{i:08x} : 0x00001000 : R\n" for i in range(129))
    [r] = run_check("amdgpu.bad_pages", make_root(files, links), live=True)
    assert r.status is Status.FAIL and "129 retired" in r.message and "128" in r.message
    [r] = run_check("amdgpu.bad_pages", make_root(files, links), {"max_bad_pages": 200},
                    live=True)
    assert r.status is Status.PASS
    files["/sys/module/amdgpu/parameters/bad_page_threshold"] = "500\n"
    [r] = run_check("amdgpu.bad_pages", make_root(files, links), live=True)
    assert r.status is Status.PASS and "bad_page_threshold=500" in r.message
    files[f"{RAS}/gpu_vram_bad_pages"] = "0x00000001 : 0x00001000 : P\n"
    [r] = run_check("amdgpu.bad_pages", make_root(files, links), live=True)
    assert r.status is Status.FAIL and "pending" in r.message


def test_radeon_and_offline_skip(make_root) -> None:
    files, links = amd_node(1, klass=0x030000, device=0x744C)
    for check in ("amdgpu.ras_errors", "amdgpu.bad_pages"):
        [r] = run_check(check, make_root(files, links), live=True)
        assert r.status is Status.SKIP and "not a data center GPU" in r.message
        [r] = run_check(check, make_root(*amd_node(1)))
        assert r.status is Status.SKIP and "offline" in r.message
