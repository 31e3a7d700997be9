"""``gpu.memory_health``: memory error counts against NVIDIA's default thresholds, on real
captures, through the check (one ``nvidia-smi -q -x`` per scan, never from a scanned
root)."""

from __future__ import annotations

from aiaudit.api import CheckContext
from aiaudit.core.model import Status
from tests.checks.gpu.test_smi_health import _SmiHost
from tests.checks.readiness_trees import gpu_host
from tests.helpers import run_check


def _spec():  # type: ignore[no-untyped-def]
    from aiaudit.core.plugins import registry

    return registry().checks["gpu.memory_health"]


def _ctx(host, params=None) -> CheckContext:  # type: ignore[no-untyped-def]
    from aiaudit.core.ruleset import _with_defaults

    return CheckContext(host=host, params=_with_defaults(params or {}, _spec().params_schema))


def _host(make_root, name: str) -> _SmiHost:  # type: ignore[no-untyped-def]
    from tests.linux.gpu import corpus

    [cap] = [c for c in corpus.captures() if c["file"].endswith(name)]
    files, links = gpu_host()
    return _SmiHost(str(make_root(files, links)), corpus.smi_xml(cap))


def test_real_gpus_pass_and_fail(make_root) -> None:
    """K80s with retired pages under the limit pass; the V100 with an uncorrectable error
    since its last reset fails with a remediation; nvidia-smi runs once, shared with
    gpu.smi_health."""
    from aiaudit.core.plugins import registry

    host = _host(make_root, "pai-nvidia_smi_out_of_order.xml")
    got = list(_spec().run(_ctx(host)))
    assert [r.status for r in got] == [Status.PASS] * 4
    assert got[0].subject == "GPU 00001580:00:00.0"
    assert got[0].data["retired_pages"] == 2 and got[0].data["limits"][
        "retired_pages_limit"] == 63
    smi = registry().checks["gpu.smi_health"]
    list(smi.run(CheckContext(host=host, params={**_ctx(host).params, "property": "ecc",
                                                 "reasons": []})))
    assert host.calls == 1
    v100 = _host(make_root, "pai-nvidia_smi_retired_pages.xml")
    [r] = list(_spec().run(_ctx(v100)))
    assert r.status is Status.FAIL and "1 uncorrectable ECC error(s)" in r.message
    assert r.remediation is not None and r.data["aggregate_uncorrectable"] == 7627


def test_params_set_the_thresholds(make_root) -> None:
    host = _host(make_root, "pai-nvidia_smi_out_of_order.xml")
    got = list(_spec().run(_ctx(host, {"retired_pages_limit": 2})))
    assert [r.status for r in got] == [Status.FAIL, Status.FAIL, Status.PASS, Status.PASS]
    got = list(_spec().run(_ctx(host, {"max_aggregate_uncorrectable": 5})))
    assert [r.status for r in got] == [Status.FAIL, Status.PASS, Status.PASS, Status.PASS]


def test_not_reported_is_a_skip_with_the_reason(make_root) -> None:
    host = _host(make_root, "telegraf-tesla_p4.xml")
    [r] = list(_spec().run(_ctx(host)))
    assert r.status is Status.SKIP and "vGPU guest" in r.message


def test_never_runs_nvidia_smi_for_a_scanned_root(make_root) -> None:
    files, links = gpu_host()
    [r] = run_check("gpu.memory_health", make_root(files, links), {}, live=True)
    assert r.status is Status.SKIP and "never run from a scanned root" in r.message


def test_nvidia_smi_failure_is_an_error(make_root) -> None:
    files, links = gpu_host()
    host = _SmiHost(str(make_root(files, links)), "NVIDIA-SMI has failed", rc=9)
    [r] = list(_spec().run(_ctx(host)))
    assert r.status is Status.ERROR and "exited 9" in r.message


def test_explain_names_the_source_of_the_thresholds() -> None:
    import subprocess

    from tests.helpers import AIAUDIT_SCRIPT

    out = subprocess.run([str(AIAUDIT_SCRIPT), "explain", "GPU-MEMORY-HEALTH"],
                         capture_output=True, text=True, check=True).stdout
    text = " ".join(out.split())
    assert "DCGM_LIMIT_MAX_RETIRED_PAGES" in text and "RMA policy" in text
    assert "retired pages limit: 63" in text and "max volatile uncorrectable: 0" in text
