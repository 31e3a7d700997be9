"""``handover.gpu_idle`` on real ``nvidia-smi -q -x`` captures (tests/fixtures/gpu)."""

from __future__ import annotations

import re

import pytest

from aiaudit.core.model import Status
from tests.checks.handover.smihost import capture, run_on, smi_host
from tests.checks.readiness_trees import gpu_host
from tests.helpers import run_check


@pytest.mark.parametrize(("name", "want"), [
    # two RTX A5000 with a llama-server compute process each (22 and 17 GB)
    ("telegraf-dual_a5000-v13.xml", [Status.FAIL, Status.FAIL]),
    # A100 with MIG, idle: 50 MiB used, no process
    ("telegraf-a100-sxm4-v12.xml", [Status.PASS]),
    # 9184 MiB used and no process listed (a process in another PID namespace)
    ("telegraf-rtx-3080-v13.xml", [Status.FAIL]),
    # idle RTX 3090, 1 MiB
    ("telegraf-rtx-3090-v12.xml", [Status.PASS]),
    # desktop: graphics processes only (Xorg, gnome-shell...), 1128 MiB used
    ("telegraf-rtx-3080-v12.xml", [Status.FAIL]),
    # vGPU guest: C+G processes with used_memory N/A
    ("telegraf-tesla_t4.xml", [Status.FAIL]),
])
def test_real_captures(make_root, name, want) -> None:
    host = smi_host(make_root, capture(name))
    got = run_on(host, "handover.gpu_idle")
    assert [r.status for r in got] == want
    assert all(r.remediation for r in got if r.status is Status.FAIL)
    assert all(r.subject.startswith("GPU 0000") for r in got)


def test_messages_and_params(make_root) -> None:
    host = smi_host(make_root, capture("telegraf-dual_a5000-v13.xml"))
    r = run_on(host, "handover.gpu_idle")[0]
    assert "llama-server (pid 100477, C, 22430 MiB)" in r.message and "leftover" in r.message
    assert r.data["processes"][0]["type"] == "C"
    host = smi_host(make_root, capture("telegraf-rtx-3080-v12.xml"))
    [r] = run_on(host, "handover.gpu_idle", {"max_used_mib": 2048})
    assert r.status is Status.PASS  # graphics only, under the raised limit
    [r] = run_on(host, "handover.gpu_idle", {"max_used_mib": 2048, "allow_graphics": False})
    assert r.status is Status.FAIL and "Xorg" in r.message


def test_one_nvidia_smi_run_for_all_rules(make_root) -> None:
    host = smi_host(make_root, capture("telegraf-a100-sxm4-v12.xml"))
    run_on(host, "handover.gpu_idle")
    run_on(host, "handover.mig")
    run_on(host, "gpu.smi_health", {"property": "ecc"})
    assert host.calls == 1


def test_never_from_a_scanned_root_and_errors(make_root) -> None:
    files, links = gpu_host()
    [r] = run_check("handover.gpu_idle", make_root(files, links), live=True)
    assert r.status is Status.SKIP and "never run from a scanned root" in r.message
    [r] = run_on(smi_host(make_root, "NVIDIA-SMI has failed", rc=9), "handover.gpu_idle")
    assert r.status is Status.ERROR and "exited 9" in r.message
    [r] = run_on(smi_host(make_root, "<nvidia_smi_log><gpu"), "handover.gpu_idle")
    assert r.status is Status.ERROR and "not well-formed" in r.message
    bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log/>'
    [r] = run_on(smi_host(make_root, bomb), "handover.gpu_idle")
    assert r.status is Status.ERROR and "entities" in r.message


def test_no_gpu_skips(make_root) -> None:
    [r] = run_check("handover.gpu_idle", make_root({"/etc/hostname": "x\n"}), live=True)
    assert r.status is Status.SKIP


def test_only_the_jobs_gpus_in_a_prolog(make_root) -> None:
    """On a shared node the prolog judges the GPUs Slurm gave the job (their minors)."""
    from aiaudit.api import CheckContext
    from aiaudit.core.plugins import registry
    from aiaudit.core.ruleset import _with_defaults

    host = smi_host(make_root, capture("telegraf-dual_a5000-v13.xml"))
    minors = [int(x) for x in re.findall(r"<minor_number>(\d+)</minor_number>",
                                         capture("telegraf-dual_a5000-v13.xml"))]
    spec = registry().checks["handover.gpu_idle"]
    ctx = CheckContext(host=host, params=_with_defaults({}, spec.params_schema),
                       settings={"env": {"SLURM_JOB_GPUS": str(minors[1])}})
    got = list(spec.run(ctx))
    assert [r.status for r in got] == [Status.SKIP, Status.FAIL]
    assert "not one of this job's GPUs" in got[0].message
