"""``aiaudit sshd --connection``: the per-connection view against the real ``sshd -T -C``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import cli
from tests.linux.sshd.sshd_corpus import SSHD, require_sshd

CONFIG = """PermitRootLogin no
PasswordAuthentication no
LogLevel QUIET
Port 22
Port 2222
ListenAddress 127.0.0.1
AllowUsers root "svc account" alice
Match User root Address 10.1.0.0/16
  PasswordAuthentication yes
  Banner etc/issue
  PermitRootLogin prohibit-password
Match Group root
  X11Forwarding yes
  MaxSessions 3
Match User !root
  AllowTcpForwarding no
"""
COMPARED = ("permitrootlogin", "passwordauthentication", "banner", "x11forwarding",
            "maxsessions", "allowtcpforwarding", "loglevel", "port", "listenaddress",
            "allowusers", "ciphers", "kexalgorithms", "macs", "hostkeyalgorithms")


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    (r / "etc/ssh").mkdir(parents=True)
    (r / "etc/ssh/sshd_config").write_text(CONFIG)
    (r / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (r / "etc/group").write_text("root:x:0:\n")
    status = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "openssh-server"],
                            capture_output=True, text=True).stdout.strip()
    (r / "var/lib/dpkg").mkdir(parents=True)
    (r / "var/lib/dpkg/status").write_text(
        f"Package: openssh-server\nStatus: install ok installed\nVersion: {status}\n\n")
    return r


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.split(" ", 1)[0] in COMPARED]


@pytest.mark.oracle
@pytest.mark.parametrize("spec", [
    "user=root,host=h.example,addr=10.1.2.3",
    "user=root,host=h.example,addr=192.168.0.1",
    "user=nobody,host=h.example,addr=10.1.2.3",
    None,
])
def test_view_matches_sshd_T_C(root: Path, tmp_path: Path, spec: str | None) -> None:
    require_sshd()
    key = tmp_path / "hk"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    argv = [SSHD, "-T", "-f", str(root / "etc/ssh/sshd_config"), "-h", str(key)]
    if spec:
        argv += ["-C", spec]
    real = subprocess.run(argv, cwd="/", capture_output=True, text=True, timeout=20)
    assert real.returncode == 0, real.stderr
    ours = cli("sshd", "--root", str(root), *(["--connection", spec] if spec else []))
    assert ours.code == 0, ours.err
    assert sorted(_lines(ours.out)) == sorted(_lines(real.stdout))


def test_json_says_which_connection(root: Path) -> None:
    r = cli("sshd", "--root", str(root), "--connection", "user=root,addr=10.1.2.3",
            "--format", "json")
    assert r.code == 0, r.err
    v = json.loads(r.out)
    assert v["connection"] == {"user": "root", "addr": "10.1.2.3", "groups": ["root"]}
    assert [b.split(" (")[0] for b in v["matched_blocks"]] == [
        "Match User root Address 10.1.0.0/16", "Match Group root"]
    pa = v["options"]["PasswordAuthentication"]
    assert pa["value"] == "yes" and pa["source"] == "etc/ssh/sshd_config:9"
    assert v["options"]["AllowUsers"]["value"] == ["root", "svc account", "alice"]
    assert v["options"]["PermitRootLogin"] == {
        "value": "prohibit-password", "sshd_T": ["without-password"],
        "source": "etc/ssh/sshd_config:11"}


@pytest.mark.parametrize("spec", ["user", "usr=alice", "lport=x", "user=a,,addr=1"])
def test_bad_connection_spec_is_a_usage_error(root: Path, spec: str) -> None:
    r = cli("sshd", "--root", str(root), "--connection", spec)
    assert r.code == 2 and r.err.startswith("aiaudit: error: --connection"), r.err
    assert "Traceback" not in r.err


def test_refused_config_names_file_and_line(root: Path) -> None:
    (root / "etc/ssh/sshd_config").write_text("AddressFamily inet6\nListenAddress 10.0.0.5\n")
    r = cli("sshd", "--root", str(root))
    assert r.code == 2
    assert "sshd_config:2: bad addr or host: 10.0.0.5 (Address family for hostname not " \
        "supported)" in r.err
