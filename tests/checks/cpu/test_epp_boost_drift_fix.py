"""cpu.epp and cpu.boost drift fixes (issue 30): the boot configuration is right and the
running CPUs are not: the fix applies what the boot applies (restart the unit that writes
it, or write the boot value through sysfs) and installs no unit of its own."""

from __future__ import annotations

from aiaudit.core.model import Aspect, SnippetKind, Status
from tests.checks.tuning_trees import CPU, TUNED_ENABLED, TUNED_LINK, intel
from tests.helpers import run_check

PERF = {"values": ["performance"]}
POWERSAVE = lambda c: "powersave"  # noqa: E731
BALANCE = lambda c: "balance_power"  # noqa: E731
EPP_FILES = f"{CPU}/cpufreq/policy*/energy_performance_preference"
CPUPOWER = {"/etc/sysconfig/cpupower": 'CPUPOWER_START_OPTS="frequency-set -g performance"\n',
            "/usr/lib/systemd/system/cpupower.service": "[Service]\nExecStart=/x\n"}
CPUPOWER_LINK = {"/etc/systemd/system/multi-user.target.wants/cpupower.service":
                 "/usr/lib/systemd/system/cpupower.service"}


def _tuned(section: str) -> dict[str, str]:
    return {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
            "/etc/tuned/p/tuned.conf": f"[cpu]\n{section}\n"}


def _drift(r, unit: str) -> list[str]:
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT), r.message
    assert "boot configuration" in r.message and "is right" in r.message
    assert all(s.kind is SnippetKind.COMMAND for s in r.remediation.snippets)
    assert unit not in r.remediation.summary and r.remediation.manual == ""
    assert "already right" in r.remediation.summary
    return [s.content for s in r.remediation.snippets]


def test_epp_tuned_right_is_restarted(make_root) -> None:
    root = intel(make_root, POWERSAVE, BALANCE,
                 extra=_tuned("energy_performance_preference=performance"), links=TUNED_LINK)
    (r,) = run_check("cpu.epp", root, PERF, live=True)
    assert _drift(r, "aiaudit-cpu-epp") == ["systemctl restart tuned.service"]


def test_epp_unit_right_is_restarted(make_root) -> None:
    unit = {"/etc/systemd/system/epp.service":
            "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo performance > "
            f"{CPU}/cpufreq/policy0/energy_performance_preference'\n"}
    links = {"/etc/systemd/system/multi-user.target.wants/epp.service":
             "/etc/systemd/system/epp.service"}
    (r,) = run_check("cpu.epp", intel(make_root, POWERSAVE, BALANCE, extra=unit, links=links),
                     PERF, live=True)
    assert _drift(r, "aiaudit-cpu-epp") == ["systemctl restart epp.service"]


def test_epp_forced_by_the_governor_unit_restarts_it(make_root) -> None:
    """cpupower.service sets the performance governor at boot, which forces the preference:
    restarting it applies both."""
    root = intel(make_root, POWERSAVE, BALANCE, extra=CPUPOWER, links=CPUPOWER_LINK)
    (r,) = run_check("cpu.epp", root, PERF, live=True)
    assert _drift(r, "aiaudit-cpu-epp") == ["systemctl restart cpupower.service"]


def test_epp_forced_by_the_command_line_writes_it_now(make_root) -> None:
    extra = {"/etc/kernel/cmdline": "cpufreq.default_governor=performance\n"}
    (r,) = run_check("cpu.epp", intel(make_root, POWERSAVE, BALANCE, extra=extra), PERF,
                     live=True)
    assert _drift(r, "aiaudit-cpu-epp") == [f"echo performance | tee {EPP_FILES}"]


def test_epp_wrong_at_boot_still_persists(make_root) -> None:
    root = intel(make_root, POWERSAVE, BALANCE,
                 extra=_tuned("energy_performance_preference=balance_power"), links=TUNED_LINK)
    (r,) = run_check("cpu.epp", root, PERF, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.PERSISTED
    assert [s.kind for s in r.remediation.snippets] == ["file", "enable", "command"]


def test_boost_off_now_but_not_at_boot_is_allowed_now_only(make_root) -> None:
    root = intel(make_root, lambda c: "performance",
                 extra={f"{CPU}/intel_pstate/no_turbo": "1\n"})
    (r,) = run_check("cpu.boost", root, live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.RUNTIME)
    assert [(s.kind, s.content) for s in r.remediation.snippets] == [(
        "command", f"echo 0 > {CPU}/intel_pstate/no_turbo 2>/dev/null; "
        f"echo 1 > {CPU}/cpufreq/boost 2>/dev/null; true")]
    assert "already right" in r.remediation.summary
    assert "aiaudit-cpu-boost" not in r.remediation.summary


def test_boost_off_at_boot_still_persists(make_root) -> None:
    root = intel(make_root, lambda c: "performance",
                 extra={f"{CPU}/intel_pstate/no_turbo": "1\n", **_tuned("no_turbo=true")},
                 links=TUNED_LINK)
    (r,) = run_check("cpu.boost", root, live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.PERSISTED)
    assert [s.kind for s in r.remediation.snippets] == ["file", "enable", "command"]
    assert "tuned" in r.remediation.manual
