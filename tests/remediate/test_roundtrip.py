"""Done-when round trip on fixture roots: scan -> remediate -> ``ROOT=copy NO_COMMANDS=1
sh install.sh`` -> rescan leaves no failure of persisted or config aspect except exactly
those the bundle README lists as needing a step by hand.  The roots: an sshd_config
without ``Include sshd_config.d`` (the bundle edits the main file in place), swap in
fstab, no firewall (nftables installed, not enabled)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from aiaudit.core.model import Aspect, RunResult, Status
from aiaudit.core.serialize import run_dict
from aiaudit.remediate import bundle as remediate
from tests.helpers import cli
from tests.reporters.scans import scan_root

NFT_UNIT = "[Service]\nExecStart=/usr/sbin/nft -f /etc/nftables.conf\n" \
           "[Install]\nWantedBy=sysinit.target\n"
NO_INCLUDE = """\
# an old distribution default: no Include of sshd_config.d
Port 22
PermitRootLogin yes
PasswordAuthentication yes
X11Forwarding yes
MaxAuthTries 6
UsePAM yes
Match User backup
  PasswordAuthentication yes
"""
FSTAB = "UUID=1 / ext4 defaults 0 1\n/swapfile none swap sw 0 0\n"
ROOTS = {
    "sshd-no-include": {"/etc/ssh/sshd_config": NO_INCLUDE, "/etc/fstab": FSTAB,
                        "/usr/lib/systemd/system/nftables.service": NFT_UNIT,
                        "/etc/hostname": "node\n"},
}
KEPT = (Aspect.PERSISTED, Aspect.CONFIG)


def _key(rule: str, subject: str) -> tuple[str, str]:
    # a Match block's subject may name its line, which an edit above it moves
    return rule, re.sub(r"(\(\S+?):\d+\)$", r"\1)", subject)


def persisted_failures(run: RunResult) -> set[tuple[str, str]]:
    """(rule, subject) of every failure of persisted or config aspect."""
    return {_key(f.rule_id, f.result.subject) for f in run.findings
            if f.status is Status.FAIL and f.result.aspect in KEPT}


def round_trip(root: Path, tmp_path: Path, scan=scan_root) -> tuple[set, set, Path]:
    """Scan, bundle (through the saved JSON report and the CLI), install offline into a
    copy, rescan.  Returns (failures left, the README's by-hand list of those aspects,
    the copy)."""
    before = scan(root)
    report = tmp_path / "scan.json"
    report.write_text(json.dumps(run_dict(before)))
    bundle = tmp_path / "bundle"
    r = cli("remediate", str(report), "--output-dir", str(bundle))
    assert r.code == 0, r.err
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    env = {**os.environ, "ROOT": str(copy), "NO_COMMANDS": "1",
           "BACKUP_DIR": str(tmp_path / "backup")}
    for _attempt in (1, 2):  # the second run changes nothing
        p = subprocess.run(["sh", str(bundle / "install.sh")], capture_output=True,
                           text=True, timeout=120, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
    assert "0 file(s) installed or edited" in p.stdout, p.stdout
    after = scan(copy)
    aspect = {(f.rule_id, f.result.subject): f.result.aspect for f in before.findings}
    listed = {_key(*k) for k in remediate.manual_list((bundle / "README.txt").read_text())
              if aspect.get(k) in KEPT}
    return persisted_failures(after), listed, copy


def test_sshd_without_include_round_trip(make_root, tmp_path: Path) -> None:
    root = make_root(ROOTS["sshd-no-include"])
    before = scan_root(root)
    failing = persisted_failures(before)
    assert {("SSH-PERMIT-ROOT-LOGIN", "PermitRootLogin"), ("MEM-SWAP-OFF", "swap"),
            ("FW-DEFAULT-DENY-INPUT", "ipv4 (boot)")} <= failing
    left, listed, copy = round_trip(root, tmp_path)
    assert left == listed
    # the Match block is the one thing a person must change
    assert {r for r, _s in listed} == {"SSH-PASSWORD-AUTHENTICATION"}, listed
    sshd = (copy / "etc/ssh/sshd_config").read_text()
    assert "# aiaudit: PermitRootLogin yes" in sshd
    assert sshd.index("PermitRootLogin no") < sshd.index("Match User backup")
    assert (tmp_path / "backup/etc/ssh/sshd_config").read_text() == NO_INCLUDE
    assert "#/swapfile none swap sw 0 0" in (copy / "etc/fstab").read_text()
    assert (copy / "etc/systemd/system/sysinit.target.wants/nftables.service").is_symlink()
    # sshd itself accepts the edited file and reads the new values (the real program)
    sshd_bin = "/usr/sbin/sshd"
    if Path(sshd_bin).exists() and shutil.which("ssh-keygen"):
        key = tmp_path / "hostkey"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                       check=True, timeout=30)
        p = subprocess.run([sshd_bin, "-T", "-f", str(copy / "etc/ssh/sshd_config"),
                            "-h", str(key)], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        assert "permitrootlogin no" in p.stdout and "x11forwarding no" in p.stdout
        assert "passwordauthentication no" in p.stdout


def test_round_trip_on_every_fixture_root(make_root, tmp_path: Path) -> None:
    """The README's not-fixed list is exact on every offline fixture root that fails."""
    from tests.remediate.test_bundle import _roots

    checked = 0
    problems = []
    for name, root in _roots(make_root):
        if not persisted_failures(scan_root(root)):
            continue
        (tmp_path / name).mkdir()
        left, listed, _copy = round_trip(root, tmp_path / name)
        if left != listed:
            problems.append(f"{name}: still failing but not listed {sorted(left - listed)}; "
                            f"listed but fixed {sorted(listed - left)}")
        checked += 1
    assert checked >= 5 and not problems, "\n".join(problems)
