"""cpu.boost: intel_pstate/no_turbo, cpufreq/boost, per-policy boost, tuned no_turbo."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.checks.tuning_trees import CPU, TUNED_ENABLED, TUNED_LINK, cpufreq, intel
from tests.helpers import run_check


def test_boost(make_root) -> None:
    root = intel(make_root, lambda c: "performance",
                  extra={f"{CPU}/intel_pstate/no_turbo": "1\n"})
    (r,) = run_check("cpu.boost", root, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    assert "intel_pstate/no_turbo=1 on CPUs 0-127" in r.message
    root = make_root({**cpufreq(4, "amd-pstate", lambda c: "performance"),
                      f"{CPU}/cpufreq/boost": "1\n"})
    (r,) = run_check("cpu.boost", root, live=True)
    assert r.status is Status.PASS
    root = make_root(cpufreq(4, "cppc_cpufreq", lambda c: "performance"))
    (r,) = run_check("cpu.boost", root, live=True)
    assert r.status is Status.SKIP and "no turbo/boost control" in r.message
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/p/tuned.conf": "[cpu]\nno_turbo=true\n"}
    (r,) = run_check("cpu.boost", make_root(files, TUNED_LINK))
    assert r.status is Status.FAIL and r.aspect is Aspect.PERSISTED and "no_turbo" in r.message
    (r,) = run_check("cpu.boost", make_root({}))
    assert r.status is Status.PASS

