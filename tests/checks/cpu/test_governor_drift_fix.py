"""cpu.governor drift fixes (issue 30): the boot setting is right and the running CPUs
are not: the fix restarts the unit that sets the governor at boot (cpupower.service, a
service, tuned); it installs no unit of its own."""

from __future__ import annotations

from aiaudit.core.model import Aspect, SnippetKind, Status
from tests.checks.tuning_trees import TUNED_ENABLED, TUNED_LINK, intel
from tests.helpers import run_check

PERF = {"governors": ["performance"]}
POWERSAVE = lambda c: "powersave"  # noqa: E731
CPUPOWER = {"/etc/sysconfig/cpupower": 'CPUPOWER_START_OPTS="frequency-set -g performance"\n',
            "/usr/lib/systemd/system/cpupower.service": "[Service]\nExecStart=/x\n"}
CPUPOWER_LINK = {"/etc/systemd/system/multi-user.target.wants/cpupower.service":
                 "/usr/lib/systemd/system/cpupower.service"}


def _commands(r) -> list[str]:
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT), r.message
    assert all(s.kind is SnippetKind.COMMAND for s in r.remediation.snippets)
    assert "aiaudit-cpu-governor" not in r.remediation.summary
    return [s.content for s in r.remediation.snippets]


def test_cpupower_service_right_is_restarted(make_root) -> None:
    root = intel(make_root, POWERSAVE, extra=CPUPOWER, links=CPUPOWER_LINK)
    (r,) = run_check("cpu.governor", root, PERF, live=True)
    assert _commands(r) == ["systemctl restart cpupower.service"]


def test_tuned_right_is_restarted(make_root) -> None:
    extra = {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/p/tuned.conf": "[cpu]\ngovernor=performance\n"}
    root = intel(make_root, POWERSAVE, extra=extra, links=TUNED_LINK)
    (r,) = run_check("cpu.governor", root, PERF, live=True)
    assert _commands(r) == ["systemctl restart tuned.service"]


def test_not_persisted_keeps_the_unit_fix(make_root) -> None:
    (r,) = run_check("cpu.governor", intel(make_root, POWERSAVE), PERF, live=True)
    assert r.aspect is not Aspect.DRIFT
    assert [s.kind for s in r.remediation.snippets] == ["file", "enable", "command"]
