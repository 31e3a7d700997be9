"""``--state`` for the kernel-log rules, end to end through the saved JSON report: a scan's
cursor (boot id, last sequence number) survives the report's round trip, and the next scan
given that report as ``settings["previous"]`` (what ``--state FILE`` hands the checks) counts
only newer lines."""

from __future__ import annotations

import shutil
from pathlib import Path

from aiaudit.core import plugins, ruleset
from aiaudit.core.host import Host
from aiaudit.core.scan import ScanOptions, scan
from aiaudit.core.serialize import run_from_dict
from aiaudit.reporters.json import render
from tests.helpers import ROOTS

RULES = ("GPU-XID-RESET-REQUIRED", "GPU-NVRM-OFF-BUS")


def _scan(root: Path, previous: object = None) -> object:
    rs = ruleset.load("slurm-preflight", plugins.registry())
    settings = {"previous": previous} if previous is not None else {}
    return scan(rs, Host(str(root), live=True), ScanOptions(only=RULES, reraise=True,
                                                            settings=settings))


def _statuses(run: object) -> dict[str, str]:
    return {f.rule_id: f.status.value for f in run.findings}  # type: ignore[attr-defined]


def test_state_reports_a_fault_once_and_a_new_one_again(tmp_path: Path) -> None:
    import json

    root = tmp_path / "root"
    shutil.copytree(ROOTS / "kmsg-xid79-off-bus/root", root)
    first = _scan(root)
    assert _statuses(first) == {r: "fail" for r in RULES}
    saved = run_from_dict(json.loads(render(first, {})))  # type: ignore[arg-type]
    second = _scan(root, saved)
    assert _statuses(second) == {r: "pass" for r in RULES}
    with open(root / "dev/kmsg", "a") as fh:
        fh.write("4,1406,32000000,-;NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the "
                 "bus.\n")
    third = _scan(root, run_from_dict(json.loads(render(second, {}))))  # type: ignore[arg-type]
    assert _statuses(third) == {"GPU-XID-RESET-REQUIRED": "fail", "GPU-NVRM-OFF-BUS": "pass"}


def test_a_previous_scan_of_another_boot_does_not_hide_faults(tmp_path: Path) -> None:
    import json

    root = tmp_path / "root"
    shutil.copytree(ROOTS / "kmsg-xid79-off-bus/root", root)
    saved = run_from_dict(json.loads(render(_scan(root), {})))  # type: ignore[arg-type]
    (root / "proc/sys/kernel/random/boot_id").write_text("11111111-2222-3333-4444-555555555555\n")
    assert _statuses(_scan(root, saved)) == {r: "fail" for r in RULES}
