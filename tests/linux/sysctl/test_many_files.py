"""Memory of the sysctl.d reading on hostile trees (issue 25): 100,000 files, a few files
of many lines, a tree past the cap.  Each tree is scanned by a child process whose peak
resident memory is measured (:func:`tests.hostile_trees.child_scan`, ``RUSAGE_CHILDREN``
of a wrapper that has only that child); it must stay under the README's bound,
:data:`tests.hostile_trees.RSS_BOUND_MB`.  Before: 100,000 one-line files peaked at
283 MB (404 MB in the issue's tree)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiaudit.linux.sysctl import files as sysctl_files
from tests.hostile_trees import RSS_BOUND_MB, child_scan

OS_RELEASE = 'ID=debian\nVERSION_ID="12"\n'


def _base(root: Path) -> Path:
    (root / "etc/sysctl.d").mkdir(parents=True)
    (root / "etc/os-release").write_text(OS_RELEASE)
    return root / "etc/sysctl.d"


def _by_rule(root: Path, rule_timeout: str = "300") -> tuple[dict[str, dict], float, float]:
    # generous wall-clock limits: the bound under test is CPU time and memory, and a
    # loaded test machine (load 11 on 16 cores) took over the default 20 s per rule
    r = child_scan("scan", "--root", str(root), "--offline", "--format", "json",
                   "--only", "SYSCTL-VM-SWAPPINESS", "SYSCTL-VM-MAX-MAP-COUNT",
                   "--timeout", "600", "--rule-timeout", rule_timeout, timeout=900)
    assert r.returncode in (0, 1, 3), r.stderr
    assert "Traceback" not in r.stderr
    return ({x["rule_id"]: x for x in r.report()["results"]}, r.maxrss_mb, r.cpu_seconds)


def test_100000_files_are_read_within_the_memory_bound(tmp_path: Path) -> None:
    d = _base(tmp_path)
    for i in range(100_000):
        (d / f"{i:06d}.conf").write_text(f"vm.key{i} = {i}\n")
    (d / "099999.conf").write_text("vm.swappiness = 10\n")  # the last file decides
    by, rss, cpu = _by_rule(tmp_path)
    assert by["SYSCTL-VM-SWAPPINESS"]["status"] == "pass", by["SYSCTL-VM-SWAPPINESS"]
    assert "etc/sysctl.d/099999.conf:1" in by["SYSCTL-VM-SWAPPINESS"]["message"]
    assert by["SYSCTL-VM-MAX-MAP-COUNT"]["status"] == "fail"
    assert rss < RSS_BOUND_MB, f"peak RSS {rss:.0f} MB"
    assert cpu < 30, f"{cpu:.1f} s of CPU"


def test_many_lines_in_few_files_are_read_within_the_memory_bound(tmp_path: Path) -> None:
    """Just under the cap: 170,000 lines of distinct keys (the heaviest kind of line)."""
    d = _base(tmp_path)
    per = 8_500
    for f in range(20):
        (d / f"{f:02d}.conf").write_text("".join(
            f"net.ipv4.conf.eth{f}x{i}.rp_filter = {i % 3}\n" for i in range(per)))
    assert 20 * per * sysctl_files.LINE_COST + 20 * sysctl_files.FILE_COST \
        <= sysctl_files.MAX_COST
    by, rss, _cpu = _by_rule(tmp_path)
    assert by["SYSCTL-VM-SWAPPINESS"]["status"] == "fail"  # evaluated: the kernel default
    assert rss < RSS_BOUND_MB, f"peak RSS {rss:.0f} MB"


@pytest.mark.parametrize("shape", ["lines", "files"])
def test_a_tree_past_the_cap_is_an_error_in_bounded_memory(tmp_path: Path, shape: str) -> None:
    d = _base(tmp_path)
    if shape == "lines":  # a million assignments in one 4 MiB file
        (d / "00.conf").write_text("a=b\n" * (4 * 1024 * 1024 // 4 - 1))
    else:
        for i in range(sysctl_files.MAX_COST // sysctl_files.FILE_COST + 10):
            (d / f"{i:06d}.conf").write_text("")
    by, rss, _cpu = _by_rule(tmp_path)
    res = by["SYSCTL-VM-SWAPPINESS"]
    assert res["status"] == "error", res
    assert "sysctl.d tree too large to evaluate" in res["message"]
    assert rss < RSS_BOUND_MB, f"peak RSS {rss:.0f} MB"


def test_rules_that_time_out_while_the_tree_is_read_share_one_reading(tmp_path: Path) -> None:
    """Both rules give up before the 100,000 files are read: the second waits for the
    first one's reading rather than starting another beside it (which doubled the peak)."""
    d = _base(tmp_path)
    for i in range(100_000):
        (d / f"{i:06d}.conf").write_text(f"vm.key{i} = {i}\n")
    by, rss, _cpu = _by_rule(tmp_path, rule_timeout="4")
    assert {r["status"] for r in by.values()} <= {"error", "fail"}
    assert rss < RSS_BOUND_MB, f"peak RSS {rss:.0f} MB"
