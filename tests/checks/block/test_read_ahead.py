"""block.read_ahead: live, offline, tuned [disk] readahead in sectors."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.checks.tuning_trees import TUNED_ENABLED, TUNED_LINK, by_subject, disk, disks_root
from tests.helpers import run_check


def test_read_ahead_live_and_offline(make_root) -> None:
    root = disks_root(make_root, disk("nvme0n1", "[none]", ra="128"),
                      disk("sda", "[mq-deadline]", ra="8", queues=1))
    res = by_subject(run_check("block.read_ahead", root, {"min_kb": 128, "max_kb": 4096},
                               live=True))
    assert res["nvme0n1"].status is Status.PASS
    assert res["sda"].status is Status.FAIL and res["sda"].actual == "8"
    assert "echo 128 > /sys/block/sda/queue/read_ahead_kb" in [
        s.content for s in res["sda"].remediation.snippets]
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "t\n",
             "/etc/tuned/t/tuned.conf": "[disk]\nreadahead=>8192 s\n"}
    res = by_subject(run_check("block.read_ahead", make_root(files, TUNED_LINK),
                               {"min_kb": 128, "max_kb": 4096}))
    assert all(r.status is Status.PASS for r in res.values())   # 8192 sectors = 4096 KB
    files["/etc/tuned/t/tuned.conf"] = "[disk]\nreadahead=16384\n"
    res = run_check("block.read_ahead", make_root(files, TUNED_LINK), {"max_kb": 4096})
    assert all(r.status is Status.FAIL and r.aspect is Aspect.PERSISTED for r in res)
