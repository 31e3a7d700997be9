"""cpu.cstates drift fixes (issue 30): the boot configuration limits C-states and the
running CPUs can still enter deep ones: the fix applies what the boot applies (restart tuned
or the cpupower unit; for the command line, disable the states through sysfs until the next
boot) and adds no parameter; a stale grub.cfg is regenerated, not given the parameters
again."""

from __future__ import annotations

from aiaudit.core.model import Aspect, SnippetKind, Status
from tests.checks.tuning_trees import GRUB_CFG, TUNED_ENABLED, TUNED_LINK, cpuidle
from tests.helpers import run_check

INTEL = [("POLL", 0), ("C1", 2), ("C1E", 10), ("C6", 170)]
P = {"max_latency_us": 10, "max_cstate": 1}
LIMITS = "intel_idle.max_cstate=1 processor.max_cstate=1"


def _root(make_root, extra=None, links=None):
    files = {**cpuidle(8, INTEL), "/proc/cmdline": "ro quiet\n", **(extra or {})}
    return make_root(files, links or {})


def _drift(r) -> list[str]:
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT), r.message
    assert "is right" in r.message
    assert all(s.kind is SnippetKind.COMMAND for s in r.remediation.snippets)
    assert "already right" in r.remediation.summary and r.remediation.manual == ""
    return [s.content for s in r.remediation.snippets]


def test_command_line_right_disables_through_sysfs_only(make_root) -> None:
    (r,) = run_check("cpu.cstates", _root(make_root, {"/boot/grub/grub.cfg": GRUB_CFG % LIMITS}),
                     P, live=True)
    [cmd] = _drift(r)
    assert cmd.startswith("cpupower idle-set -D 10 || for f in ")
    assert "update-grub" not in r.remediation.summary


def test_tuned_right_is_restarted(make_root) -> None:
    extra = {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/p/tuned.conf": "[cpu]\nforce_latency=3\n"}
    (r,) = run_check("cpu.cstates", _root(make_root, extra, TUNED_LINK), P, live=True)
    assert _drift(r) == ["systemctl restart tuned.service"]


def test_cpupower_unit_right_is_restarted(make_root) -> None:
    extra = {"/etc/systemd/system/idle.service":
             "[Service]\nType=oneshot\nExecStart=/usr/bin/cpupower idle-set -D 2\n"}
    links = {"/etc/systemd/system/multi-user.target.wants/idle.service":
             "/etc/systemd/system/idle.service"}
    (r,) = run_check("cpu.cstates", _root(make_root, extra, links), P, live=True)
    assert _drift(r) == ["systemctl restart idle.service"]


def test_stale_grub_cfg_is_regenerated_not_given_the_parameters_again(make_root) -> None:
    """/etc/default/grub has the limits, grub.cfg was not regenerated: the next boot has
    none, so the rule fails (not as drift), and the fix is update-grub (no drop-in)."""
    extra = {"/boot/grub/grub.cfg": GRUB_CFG % "quiet",
             "/etc/default/grub": f'GRUB_CMDLINE_LINUX_DEFAULT="quiet {LIMITS}"\n'}
    for live in (True, False):
        (r,) = run_check("cpu.cstates", _root(make_root, extra), P, live=live)
        assert r.status is Status.FAIL and r.aspect is not Aspect.DRIFT, r.message
        assert [s.kind for s in r.remediation.snippets] == (
            ["command", "command"] if live else ["command"])
        assert r.remediation.snippets[0].content == "update-grub"
        assert "etc/default/grub" in r.remediation.summary


def test_wrong_everywhere_still_adds_the_parameters(make_root) -> None:
    (r,) = run_check("cpu.cstates", _root(make_root, {"/boot/grub/grub.cfg": GRUB_CFG % "quiet"}),
                     P, live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.RUNTIME)
    assert [s.kind for s in r.remediation.snippets] == ["file", "command", "command"]
    assert r.remediation.snippets[0].path == "/etc/default/grub.d/99-aiaudit.cfg"
