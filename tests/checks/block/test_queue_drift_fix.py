"""block.scheduler and block.read_ahead drift fixes (issue 30): the boot value is right and
the running one is not: the fix replays what writes it at boot (the udev rule, for that disk;
tuned) or writes the kernel default, and adds no udev rule of its own."""

from __future__ import annotations

from aiaudit.core.model import Aspect, SnippetKind, Status
from tests.checks.tuning_trees import TUNED_ENABLED, TUNED_LINK, by_subject, disk, disks_root
from tests.helpers import run_check

RULES = "/etc/udev/rules.d/60-s.rules"
RELOAD = "udevadm control --reload && udevadm trigger"


def _drift(r, aspect: Aspect = Aspect.DRIFT) -> list[str]:
    assert (r.status, r.aspect) == (Status.FAIL, aspect), r.message
    assert all(s.kind is SnippetKind.COMMAND for s in r.remediation.snippets)
    assert "already right" in r.remediation.summary
    assert "99-zz-aiaudit" not in r.remediation.summary
    return [s.content for s in r.remediation.snippets]


def test_udev_rule_right_is_replayed_for_the_disk(make_root) -> None:
    rules = {RULES: 'ACTION=="add|change", KERNEL=="nvme*", ATTR{queue/scheduler}="none"\n'}
    root = disks_root(make_root, disk("nvme0n1", "none [kyber]"), disk("nvme1n1", "[none]"),
                      files=rules)
    res = by_subject(run_check("block.scheduler", root, live=True))
    assert "is right" in res["nvme0n1"].message and "60-s.rules:1" in res["nvme0n1"].message
    assert _drift(res["nvme0n1"]) == [f"{RELOAD} --action=change /sys/block/nvme0n1"]
    assert res["nvme1n1"].status is Status.PASS


def test_add_only_rule_is_replayed_as_add(make_root) -> None:
    """A rule limited to ACTION=="add" writes nothing on a change event: the trigger
    replays the add event, as systemd-udev-trigger does at boot.  Checked with udev 252
    (Debian 12): with such a rule for loop7 in /run/udev/rules.d, `udevadm test
    --action=change /sys/block/loop7` wrote nothing, `--action=add` wrote the value."""
    rules = {RULES: 'ACTION=="add", KERNEL=="nvme*", ATTR{queue/read_ahead_kb}="4096"\n'}
    root = disks_root(make_root, disk("nvme0n1", "[none]", ra="128"), files=rules)
    (r,) = run_check("block.read_ahead", root, {"min_kb": 1024}, live=True)
    assert _drift(r) == [f"{RELOAD} --action=add /sys/block/nvme0n1"]


def test_tuned_right_is_restarted(make_root) -> None:
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "t\n",
             "/etc/tuned/t/tuned.conf": "[disk]\ndevices=nvme*\nreadahead=4096\n"}
    root = disks_root(make_root, disk("nvme0n1", "[none]", ra="128"), files=files,
                      links=TUNED_LINK)
    (r,) = run_check("block.read_ahead", root, {"min_kb": 1024}, live=True)
    assert _drift(r) == ["systemctl restart tuned.service"]


def test_kernel_default_right_is_written_now(make_root) -> None:
    root = disks_root(make_root, disk("sda", "[mq-deadline]", ra="16"))
    (r,) = run_check("block.read_ahead", root, live=True)
    assert _drift(r, Aspect.RUNTIME) == ["echo 128 > /sys/block/sda/queue/read_ahead_kb"]


def test_rule_wrong_still_gets_the_rule(make_root) -> None:
    rules = {RULES: 'KERNEL=="nvme*", ATTR{queue/scheduler}="kyber"\n'}
    root = disks_root(make_root, disk("nvme0n1", "none [kyber]"), files=rules)
    (r,) = run_check("block.scheduler", root, live=True)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.PERSISTED)
    assert [s.kind for s in r.remediation.snippets] == ["file", "command"]
    assert r.remediation.snippets[0].path == "/etc/udev/rules.d/99-zz-aiaudit-block.rules"
