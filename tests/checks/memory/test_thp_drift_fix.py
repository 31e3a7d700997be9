"""memory.thp drift fixes (issue 30): when the boot configuration is right and only the
running kernel differs, the fix applies what is configured (restart the unit that writes it,
or write the command line's value through sysfs) and adds no parameter, unit or profile."""

from __future__ import annotations

from aiaudit.core.model import Aspect, SnippetKind, Status
from tests.checks.tuning_trees import GRUB_CFG, TUNED_ENABLED, TUNED_LINK
from tests.helpers import run_check

THP = "/sys/kernel/mm/transparent_hugepage"
ENABLED = {"setting": "enabled", "allowed": ["madvise", "always"]}
RUNNING_NEVER = {f"{THP}/enabled": "always madvise [never]\n", "/proc/cmdline": "ro\n"}


def _drift(root):
    (r,) = run_check("memory.thp", root, ENABLED, live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT), r.message
    assert all(s.kind is SnippetKind.COMMAND for s in r.remediation.snippets)
    assert r.remediation.manual == "" and "already right" in r.remediation.summary
    return [s.content for s in r.remediation.snippets]


def test_command_line_right_applies_its_value_through_sysfs(make_root) -> None:
    files = {**RUNNING_NEVER, "/boot/grub/grub.cfg": GRUB_CFG % "transparent_hugepage=madvise"}
    assert _drift(make_root(files)) == [f"echo madvise > {THP}/enabled"]


def test_tuned_right_restarts_tuned(make_root) -> None:
    files = {**RUNNING_NEVER, **TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/p/tuned.conf": "[vm]\ntransparent_hugepages=always\n"}
    assert _drift(make_root(files, TUNED_LINK)) == ["systemctl restart tuned.service"]


def test_wrong_everywhere_still_persists(make_root) -> None:
    files = {**RUNNING_NEVER, "/boot/grub/grub.cfg": GRUB_CFG % "transparent_hugepage=never"}
    (r,) = run_check("memory.thp", make_root(files), ENABLED, live=True)
    assert r.aspect is Aspect.PERSISTED
    assert "update-grub" in [s.content for s in r.remediation.snippets]
