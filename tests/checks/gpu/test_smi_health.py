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


def _run_capture(make_root, name: str, prop: str) -> list:
    from aiaudit.core.plugins import registry
    from aiaudit.core.ruleset import _with_defaults
    from tests.linux.gpu import corpus

    [cap] = [c for c in corpus.captures() if c["file"].endswith(name)]
    files, links = gpu_host()
    host = _SmiHost(str(make_root(files, links)), corpus.smi_xml(cap))
    spec = registry().checks["gpu.smi_health"]
    ctx = CheckContext(host=host, params=_with_defaults({"property": prop},
                                                        spec.params_schema))
    return list(spec.run(ctx))


def test_real_mig_capture_is_not_reported_not_passed(make_root) -> None:
    """Issue 26: the A100 MIG capture (remapped_rows N/A) is skipped with the reason and
    the ECC counts MIG mode reports, never "nothing pending"."""
    [r] = _run_capture(make_root, "telegraf-a100-sxm4-v12.xml", "memory_errors")
    assert r.status is Status.SKIP and "MIG" in r.message
    assert r.subject == "GPU 00000000:01:00.0" and r.data["mig"] == "Enabled"


def test_real_power_capped_capture_fails_through_the_check(make_root) -> None:
    """Issue 26: driver 525's <power_readings><power_limit> 200 W of 350 W."""
    [r] = _run_capture(make_root, "telegraf-rtx-3090-v12.xml", "throttle")
    assert r.status is Status.FAIL and "200 W is below the default 350 W" in r.message
    assert r.remediation is not None and r.data["default_power_limit_w"] == 350.0


def test_real_busy_gpu_at_its_default_limit_passes(make_root) -> None:
    """Issue 26: SW power cap at the default limit under load is normal."""
    [r] = _run_capture(make_root, "telegraf-3090-v13.xml", "throttle")
    assert r.status is Status.PASS and "normal under load" in r.message


def test_listed_benign_reason_is_judged_when_the_ruleset_asks(make_root) -> None:
    """A reason outside the defaults (gpu_idle) counts only when a ruleset lists it."""
    from aiaudit.core.plugins import registry
    from aiaudit.core.ruleset import _with_defaults
    from tests.linux.gpu import corpus

    [cap] = [c for c in corpus.captures() if c["file"].endswith("telegraf-a10g.xml")]
    files, links = gpu_host()
    host = _SmiHost(str(make_root(files, links)), corpus.smi_xml(cap))
    spec = registry().checks["gpu.smi_health"]
    params = _with_defaults({"property": "throttle", "reasons": ["gpu_idle"]},
                            spec.params_schema)
    [r] = list(spec.run(CheckContext(host=host, params=params)))
    assert r.status is Status.FAIL and "GPU idle" in r.message
