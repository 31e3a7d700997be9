"""contrib/ansible/aiaudit-fleet.yml run by the real ansible-playbook on an inventory of
three local "hosts", each scanning its own fixture root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import AIAUDIT_SCRIPT, build_root

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = REPO / "contrib" / "ansible" / "aiaudit-fleet.yml"
AIAUDIT = AIAUDIT_SCRIPT  # the program the playbook runs on the hosts and the controller

pytestmark = pytest.mark.slow


def _ansible_playbook() -> str:
    here = Path(sys.executable).parent / "ansible-playbook"
    path = str(here) if here.exists() else shutil.which("ansible-playbook")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("ansible-playbook (pip ansible-core, the test extra) must be installed")
        pytest.skip("ansible-playbook not installed (pip install ansible-core)")
    return path


def _root(base: Path, name: str, machine_id: str, swappiness: str | None) -> Path:
    files = {"etc/hostname": f"{name}\n", "etc/machine-id": f"{machine_id}\n",
             "etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n'}
    if swappiness is not None:
        files["etc/sysctl.d/90-train.conf"] = f"vm.swappiness = {swappiness}\n"
    return build_root(base / name, files)


def test_playbook_scans_every_host_and_aggregates(tmp_path: Path) -> None:
    playbook = _ansible_playbook()
    if not AIAUDIT.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"no aiaudit console script next to the interpreter ({AIAUDIT})")
        pytest.skip(f"no aiaudit console script next to the interpreter ({AIAUDIT})")
    roots = {"node1": _root(tmp_path, "gpu001", "1" * 32, None),
             "node2": _root(tmp_path, "gpu002", "2" * 32, None),
             "node3": _root(tmp_path, "gpu003", "3" * 32, "10")}
    inventory = {"all": {
        "hosts": {host: {"ansible_connection": "local",
                         "ansible_python_interpreter": sys.executable,
                         "aiaudit_scan_args": ["--root", str(root)]}
                  for host, root in roots.items()},
        "vars": {"aiaudit_bin": str(AIAUDIT)}}}
    inv = tmp_path / "inventory.json"  # JSON is YAML: the YAML inventory plugin reads it
    inv.write_text(json.dumps(inventory))
    reports = tmp_path / "reports"
    extra = {"aiaudit_report_dir": str(reports), "aiaudit_controller_bin": str(AIAUDIT),
             "aiaudit_fleet_fail": False}
    env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_INVENTORY_ENABLED": "yaml", "ANSIBLE_LOCALHOST_WARNING": "0",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    res = subprocess.run([playbook, "-i", str(inv), str(PLAYBOOK), "-e", json.dumps(extra)],
                         capture_output=True, text=True, timeout=240, env=env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert sorted(p.name for p in (reports / "nodes").iterdir()) == [
        "node1.json", "node2.json", "node3.json"]
    doc = json.loads((reports / "fleet.json").read_text())
    assert doc["groups"][0]["nodes"] == {"count": 3, "hosts": "gpu[001-003]"}
    swap = next(r for r in doc["groups"][0]["rules"] if r["id"] == "SYSCTL-VM-SWAPPINESS")
    assert swap["failing"]["hosts"] == "gpu[001-002]"
    drift = next(d for d in doc["drift"] if d["rule"] == "SYSCTL-VM-SWAPPINESS")
    assert drift["majority"] == "60" and drift["outliers"]["hosts"] == "gpu003"
    assert (reports / "fleet.html").read_text().startswith("<!DOCTYPE html>")
    assert "aiaudit_fleet_rule_failing_nodes" in (reports / "fleet.prom").read_text()
    assert "aiaudit fleet: 3 node(s)" in res.stdout, res.stdout[-2500:]

    # the gate: by default a failing fleet fails the play; --since the last run's fleet.json
    del extra["aiaudit_fleet_fail"]
    extra["aiaudit_fleet_args"] = ["--since", str(reports / "fleet.json")]
    res = subprocess.run([playbook, "-i", str(inv), str(PLAYBOOK), "-e", json.dumps(extra)],
                         capture_output=True, text=True, timeout=240, env=env)
    assert res.returncode != 0 and "aiaudit fleet exited 1" in res.stdout, res.stdout[-2500:]
    assert "0 node(s) worse, 0 better, 0 new, 0 gone" in res.stdout
    assert json.loads((reports / "fleet.json").read_text())["since"]["worse"] == []
