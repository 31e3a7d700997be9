"""``handover.mig`` on real captures; the pending-mode case is the real A100 capture with
its ``pending_mig`` changed (labelled: derived)."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.handover.smihost import capture, run_on, smi_host

A100 = "telegraf-a100-sxm4-v12.xml"


def test_a100_mig_enabled_settled(make_root) -> None:
    [r] = run_on(smi_host(make_root, capture(A100)), "handover.mig")
    assert r.status is Status.PASS and "4 MIG device(s)" in r.message
    assert r.data["instances"] == [{"gpu_instance": gi, "memory_mib": 19968}
                                   for gi in ("3", "4", "5", "6")]
    host = smi_host(make_root, capture(A100))
    assert run_on(host, "handover.mig", {"instances": 4})[0].status is Status.PASS
    assert run_on(host, "handover.mig", {"instances": 3})[0].status is Status.FAIL
    assert run_on(host, "handover.mig", {"instance_memory_mib": 40000})[0].status \
        is Status.FAIL
    r = run_on(host, "handover.mig", {"mode": "disabled"})[0]
    assert r.status is Status.FAIL and "expects disabled" in r.message


def test_pending_change_fails(make_root) -> None:  # derived from the real A100 capture
    xml = capture(A100).replace("<pending_mig>Enabled</pending_mig>",
                                "<pending_mig>Disabled</pending_mig>")
    [r] = run_on(smi_host(make_root, xml), "handover.mig")
    assert r.status is Status.FAIL and "Disabled pending" in r.message and r.remediation


def test_gpu_without_mig(make_root) -> None:
    host = smi_host(make_root, capture("telegraf-dual_a5000-v13.xml"))
    assert {r.status for r in run_on(host, "handover.mig")} == {Status.SKIP}
    assert {r.status for r in run_on(host, "handover.mig", {"mode": "enabled"})} == \
        {Status.FAIL}
