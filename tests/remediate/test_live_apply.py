"""install.sh on the running system, with fake ``systemctl``, ``nft`` and ``ss`` first on
PATH (bundles here carry no file, so nothing of this machine is written): NO_COMMANDS
skips ``systemctl`` too, the firewall is refused when an established SSH session's port
would be closed, loaded with a timed rollback otherwise, and kept once confirmed."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from aiaudit.core.model import Remediation, Result, Snippet, Status
from aiaudit.remediate import bundle as remediate
from tests.reporters.samples import mixed_run

FAKE = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
case "$(basename "$0") $*" in
    "systemctl is-enabled"*) exit 1 ;;
    "systemctl is-active --quiet ssh.service") [ -n "$SSH_ACTIVE" ] || exit 3 ;;
    "systemctl is-active"*) exit 3 ;;
    "sshd -t"*) exit "${{SSHD_RC:-0}}" ;;
    "nft list ruleset") echo "table inet old {{ }}" ;;
    "ss "*) printf '%s\\n' {ss} ;;
esac
exit 0
"""


def bundle(tmp_path: Path, *snippets: Snippet) -> Path:
    run = mixed_run()
    f = replace(run.findings[1], result=Result(Status.FAIL, "x", "m", remediation=Remediation(
        "fix", snippets)))
    out = tmp_path / "bundle"
    remediate.write(replace(run, findings=(f,)), str(out))
    return out


def fakes(tmp_path: Path, ss_lines: list[str]) -> tuple[dict[str, str], Path]:
    bin_ = tmp_path / "fakebin"
    bin_.mkdir(parents=True)
    log = tmp_path / "calls.log"
    ss = " ".join("'" + ln + "'" for ln in ss_lines) or "''"
    for name in ("systemctl", "nft", "ss", "sshd"):
        p = bin_ / name
        p.write_text(FAKE.format(log=log, ss=ss))
        p.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "SSH_CONNECTION"}
    return {**env, "PATH": f"{bin_}:{os.environ['PATH']}",
            "BACKUP_DIR": str(tmp_path / "backup")}, log


def sh(out: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(out / "install.sh"), *args], capture_output=True,
                          text=True, timeout=60, env=env)


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_no_commands_skips_systemctl_on_a_live_host(tmp_path: Path) -> None:
    out = bundle(tmp_path, Snippet.enable("aiaudit-x.service"), Snippet.mask("dev-sda2.swap"))
    env, log = fakes(tmp_path, [])
    p = sh(out, {**env, "NO_COMMANDS": "1"})
    assert p.returncode == 0, p.stderr
    assert calls(log) == [] and "skipped (NO_COMMANDS): systemctl enable" in p.stdout
    p = sh(out, env)
    assert p.returncode == 0, p.stderr
    # "--" before the unit: a name starting with "-" is never read as an option
    assert "systemctl enable -- aiaudit-x.service" in calls(log)
    assert "systemctl mask -- dev-sda2.swap" in calls(log)


SESSION = 'ESTAB 0 0 10.0.0.5:{port} 10.0.0.9:50000 users:(("sshd",pid=1,fd=4))'


def test_firewall_refused_when_an_ssh_session_would_be_cut(tmp_path: Path) -> None:
    out = bundle(tmp_path, Snippet.apply("nftables 22,6817-6818"))
    env, log = fakes(tmp_path, [SESSION.format(port=2222).replace("ESTAB ", "")])
    p = sh(out, env)
    assert p.returncode == 1 and "port 2222" in p.stderr, p.stdout + p.stderr
    assert "nft -f /etc/nftables.conf" not in calls(log)
    # the same from $SSH_CONNECTION (the session running the script)
    env, log = fakes(tmp_path / "2", [])
    p = sh(out, {**env, "SSH_CONNECTION": "10.0.0.9 50000 10.0.0.5 2200"})
    assert p.returncode == 1 and "port 2200" in p.stderr
    assert "nft -f /etc/nftables.conf" not in calls(log)


def test_firewall_rolls_back_unless_confirmed(tmp_path: Path) -> None:
    out = bundle(tmp_path, Snippet.apply("nftables 22,6817-6818"))
    env, log = fakes(tmp_path, [SESSION.format(port=22).replace("ESTAB ", "")])
    env = {**env, "FIREWALL_ROLLBACK": "1", "SSH_CONNECTION": "10.0.0.9 5 10.0.0.5 6817"}
    p = sh(out, env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert calls(log)[:1] == ["nft -c -f /etc/nftables.conf"]
    assert "nft -f /etc/nftables.conf" in calls(log) and "confirm-firewall" in p.stdout
    saved = tmp_path / "backup/nftables.running"
    assert saved.read_text() == "flush ruleset\ntable inet old { }\n"
    deadline = time.monotonic() + 20
    while f"nft -f {saved}" not in calls(log) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert f"nft -f {saved}" in calls(log), calls(log)  # rolled back
    # confirmed in time: kept
    log.unlink()
    p = sh(out, {**env, "FIREWALL_ROLLBACK": "3"})
    assert p.returncode == 0
    assert sh(out, env, "confirm-firewall").returncode == 0
    time.sleep(4.5)
    assert f"nft -f {saved}" not in calls(log), calls(log)


def test_sshd_validated_then_reloaded_only_when_running(tmp_path: Path) -> None:
    out = bundle(tmp_path, Snippet.apply("sshd"))
    env, log = fakes(tmp_path, [])
    p = sh(out, env)
    assert p.returncode == 0 and "sshd is not running" in p.stdout, p.stderr
    assert "sshd -t -f /etc/ssh/sshd_config" in calls(log)
    assert not any(c.startswith("systemctl reload") for c in calls(log))
    p = sh(out, {**env, "SSH_ACTIVE": "1"})
    assert p.returncode == 0 and "systemctl reload ssh.service" in calls(log)
    log.unlink()
    p = sh(out, {**env, "SSH_ACTIVE": "1", "SSHD_RC": "255"})
    assert p.returncode == 1 and "sshd -t refuses" in p.stderr
    assert not any(c.startswith("systemctl reload") for c in calls(log))
