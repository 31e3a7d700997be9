"""``fabric.gpu_state``: the fabric section of real captures.  The H100 documents are
derived from GPUd's real ``nvidia-smi -q`` text (8x H100 80GB HBM3, drivers 535.161.08 and
535.183.01: State Completed, Status Success); the N/A case is a real XML capture; the
failing states are those derived documents with one value changed (labelled)."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from tests.checks.fabric.derive import derived_xml
from tests.checks.handover.smihost import capture, run_on, smi_host

H100 = ("gpud-nvidia-smi-query.535.161.08.out.0.valid.txt",
        "gpud-nvidia-smi-query.535.183.01.out.0.valid.txt")


@pytest.mark.parametrize("name", H100)
def test_h100_hgx_registered(make_root, name) -> None:
    got = run_on(smi_host(make_root, derived_xml(name)), "fabric.gpu_state")
    assert [r.status for r in got] == [Status.PASS] * 8
    assert "Completed / Success" in got[0].message


def test_no_fabric_skips(make_root) -> None:
    got = run_on(smi_host(make_root, capture("telegraf-a100-sxm4-v12.xml")),
                 "fabric.gpu_state")
    assert [r.status for r in got] == [Status.SKIP]
    got = run_on(smi_host(make_root, derived_xml(
        "gpud-nvidia-smi-query.535.154.05.out.1.valid.txt")), "fabric.gpu_state")
    assert {r.status for r in got} == {Status.SKIP}


@pytest.mark.parametrize(("old", "new", "words"), [
    ("<state>Completed</state><status>Success</status>",
     "<state>In Progress</state><status>N/A</status>", "fabric state In Progress"),
    ("<state>Completed</state><status>Success</status>",
     "<state>Not Started</state><status>N/A</status>", "fabric state Not Started"),
    ("<status>Success</status>", "<status>Timeout</status>", "registration failed: Timeout"),
    ("<status>Success</status>", "<status>Success</status><health><bandwidth>Degraded"
     "</bandwidth><route_unhealthy>False</route_unhealthy></health>",
     "health bandwidth: Degraded"),
])
def test_unregistered_or_unhealthy_fails(make_root, old, new, words) -> None:
    xml = derived_xml(H100[1]).replace(old, new, 1)  # the first GPU changed
    got = run_on(smi_host(make_root, xml), "fabric.gpu_state")
    assert [r.status for r in got] == [Status.FAIL] + [Status.PASS] * 7
    assert words in got[0].message and got[0].remediation


def test_healthy_health_block_passes(make_root) -> None:
    """The v13 health block of a real capture (all N/A) and healthy wordings pass."""
    xml = derived_xml(H100[1]).replace(
        "<status>Success</status>", "<status>Success</status><health><summary>Healthy"
        "</summary><bandwidth>Full</bandwidth><route_recovery_in_progress>False"
        "</route_recovery_in_progress><incorrect_configuration>None"
        "</incorrect_configuration></health>", 1)
    got = run_on(smi_host(make_root, xml), "fabric.gpu_state")
    assert {r.status for r in got} == {Status.PASS}
