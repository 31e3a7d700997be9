"""``gpu.cuda_driver``: the driver is new enough for each toolkit and framework build;
nothing from the scanned root is ever imported."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.gpu.trees import LDCONF, by_subject, stack, toolkit, torch
from tests.helpers import run_check


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
    # a release newer than the table is unknown (skip, with the table's date), never an
    # error that fails a CI gate (issue 26)
    assert bad.status is Status.SKIP and "cuda_drivers.json" in bad.message
    assert "unknown" in bad.message and "table from 2026-11-29" in bad.message


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


def test_newer_runtime_wheel_raises_the_release_requirement(make_root) -> None:
    site = "/usr/local/lib/python3.10/dist-packages"
    files = {**torch(site, "2.3.0+cu121", "12.1"),
             f"{site}/nvidia_cuda_runtime_cu12-12.4.127.dist-info/METADATA": "x"}
    res = run_check("gpu.cuda_driver", stack(make_root, files=files), {"table": "release"})
    assert res[0].status is Status.FAIL and res[0].expected == ">= 550.54.14"


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


# ------------------------------------------------------- issue 26: the driver's own CUDA
def _live(make_root, capture: str, files: dict, params: dict | None = None):
    """``gpu.cuda_driver`` on a root whose live nvidia-smi prints the real capture (a
    Host that answers Host.run with it; the scan-path test is test_gpu_captures.py)."""
    from aiaudit.api import CheckContext
    from aiaudit.core.plugins import registry
    from aiaudit.core.ruleset import _with_defaults
    from tests.checks.gpu.test_smi_health import _SmiHost
    from tests.linux.gpu import corpus

    [cap] = [c for c in corpus.captures() if c["file"].endswith(capture)]
    root = stack(make_root, module=cap["driver"], lib=cap["driver"], files=files)
    host = _SmiHost(str(root), corpus.smi_xml(cap))
    spec = registry().checks["gpu.cuda_driver"]
    ctx = CheckContext(host=host, params=_with_defaults(dict(params or {}),
                                                        spec.params_schema))
    return by_subject(list(spec.run(ctx))), host


def _stale_table(monkeypatch) -> None:
    """The shipped table as it was before CUDA 13 (rows cut, read date moved back)."""
    import json

    from aiaudit.core import resources
    from aiaudit.linux.gpu import cuda
    from aiaudit.linux.gpu import stack as gs

    doc = json.loads(resources.read_text("aiaudit.checks", "data/cuda_drivers.json"))
    doc["read"] = "2025-06-01"
    doc["minor_version_compat"] = [r for r in doc["minor_version_compat"]
                                   if r["cuda_major"] < 13]
    doc["toolkit_driver"] = [r for r in doc["toolkit_driver"]
                             if not r["cuda"].startswith("13.")]
    monkeypatch.setattr(gs, "_TABLE", cuda.parse_driver_table(doc))


def test_driver_newer_than_the_table_is_never_an_error(make_root, monkeypatch) -> None:
    """Item 3, on the real 595.58.03 capture (the driver reports CUDA 13.2) with a table
    from before CUDA 13: live, the driver's own CUDA version decides; offline, unknown with
    the table's date (skip), never an error."""
    _stale_table(monkeypatch)
    files = toolkit("13.2.0")
    for table in ("minor_compat", "release"):
        res, host = _live(make_root, "telegraf-rtx-3080-v13.xml", files, {"table": table})
        r = res["CUDA 13.2.0 (/usr/local/cuda-13.2)"]
        assert r.status is Status.PASS, r.message
        assert "the driver reports CUDA 13.2 (nvidia-smi)" in r.message
        assert r.data["driver_cuda"] == "13.2" and host.calls == 1
    root = stack(make_root, module="595.58.03", lib="595.58.03", files=files)
    for table in ("minor_compat", "release"):
        [r] = run_check("gpu.cuda_driver", root, {"table": table})
        assert r.status is Status.SKIP, r.message
        assert r.message.startswith("unknown: CUDA 13.2.0 is newer than the")
        assert "table from 2025-06-01" in r.message


def test_toolkit_newer_than_the_driver_reported_cuda_fails(make_root) -> None:
    """The real 470.74 capture reports CUDA 11.4: a CUDA 12.2 toolkit cannot run (minor
    compatibility needs CUDA 12.x from the driver), a CUDA 11.4 one can."""
    res, _ = _live(make_root, "telegraf-gt-1030.xml", {**toolkit("12.2.2"), **toolkit("11.4.4")})
    bad = res["CUDA 12.2.2 (/usr/local/cuda-12.2)"]
    assert bad.status is Status.FAIL and "the driver reports CUDA 11.4" in bad.message
    assert bad.remediation is not None
    assert res["CUDA 11.4.4 (/usr/local/cuda-11.4)"].status is Status.PASS


def test_driver_without_cuda_version_falls_back_to_the_table(make_root) -> None:
    """The real 430.26 K80 capture says cuda_version 'Not Found': the table decides."""
    res, _ = _live(make_root, "pai-nvidia_smi_out_of_order.xml", toolkit("10.1.243"))
    r = res["CUDA 10.1 (/usr/local/cuda-10.1)"]  # 243 is a build, not an update
    assert r.status is Status.PASS and r.expected == ">= 418.39"
