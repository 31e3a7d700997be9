"""``gpu.smi_health``: ``nvidia-smi -q -x`` judged per GPU, run once per scan, never from
a scanned root."""

from __future__ import annotations

import pytest

from aiaudit.api import CheckContext
from aiaudit.core.host import CommandResult, Host
from aiaudit.core.model import Status
from tests.checks.readiness_trees import gpu_host
from tests.helpers import run_check
from tests.linux.gpu.test_nvsmi import SMI


class _SmiHost(Host):
    def __init__(self, root: str, out: str, rc: int = 0) -> None:
        super().__init__(root, live=True, allow_commands=True)
        self.out, self.rc, self.calls = out, rc, 0

    def run(self, argv, *, timeout=None):  # type: ignore[override]
        self.calls += 1
        return CommandResult(tuple(argv), self.rc, self.out, "")


@pytest.mark.parametrize(("prop", "want"), [
    ("ecc", [Status.PASS, Status.FAIL]),
    ("memory_errors", [Status.PASS, Status.FAIL]),
    ("throttle", [Status.PASS, Status.FAIL]),
])
def test_smi_health(make_root, prop, want) -> None:
    from aiaudit.core.plugins import registry
    from aiaudit.core.ruleset import _with_defaults

    files, links = gpu_host()
    host = _SmiHost(str(make_root(files, links)), SMI)
    spec = registry().checks["gpu.smi_health"]
    ctx = CheckContext(host=host, params=_with_defaults({"property": prop},
                                                        spec.params_schema))
    got = list(spec.run(ctx))
    assert [r.status for r in got] == want
    assert all(r.remediation for r in got if r.status is Status.FAIL)
    list(spec.run(ctx))
    assert host.calls == 1, "nvidia-smi runs once per scan"


def test_smi_never_runs_for_a_scanned_root(make_root) -> None:
    files, links = gpu_host()
    [r] = run_check("gpu.smi_health", make_root(files, links), {"property": "ecc"}, live=True)
    assert r.status is Status.SKIP and "never run from a scanned root" in r.message


def test_smi_failure_is_an_error(make_root) -> None:
    from aiaudit.core.plugins import registry
    from aiaudit.core.ruleset import _with_defaults

    files, links = gpu_host()
    host = _SmiHost(str(make_root(files, links)), "NVIDIA-SMI has failed", rc=9)
    spec = registry().checks["gpu.smi_health"]
    ctx = CheckContext(host=host, params=_with_defaults({"property": "ecc"}, spec.params_schema))
    [r] = list(spec.run(ctx))
    assert r.status is Status.ERROR and "exited 9" in r.message
