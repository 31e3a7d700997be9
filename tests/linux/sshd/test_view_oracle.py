"""``aiaudit sshd`` prints what ``sshd -T`` prints, no more and no less (issue 30): every
line of the real ``sshd -T -f FILE -C SPEC`` output, over several configurations and
connections, against :func:`aiaudit.linux.sshd.view.render_text` for a root holding the same
files and the same ``openssh-server`` package version.

Oracles: the installed OpenSSH 9.2 (Debian 12), and, where a Debian 13 root exists at
``/tmp/e27k/trixie`` (OpenSSH 10.0, built by another test session), its sshd run under
``chroot`` (never from aiaudit: aiaudit only reads files).  Lines are compared as sorted
multisets: ``sshd -T`` prints in its ``dump_config`` order, aiaudit alphabetically."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from aiaudit.core.errors import UsageError
from aiaudit.core.host import Host
from aiaudit.linux.sshd.view import render_text, view
from tests.helpers import cli
from tests.linux.sshd.sshd_corpus import SSHD, require_sshd

pytestmark = pytest.mark.oracle

def _trixie_root() -> Path:
    """The Debian 13 root: ``$AIAUDIT_TRIXIE_ROOT``, else the one
    tests/checks/sysctl/test_debian13_root.py built (it runs first in a full run), else
    a hand-built one at /tmp/e27k/trixie."""
    if os.environ.get("AIAUDIT_TRIXIE_ROOT"):
        return Path(os.environ["AIAUDIT_TRIXIE_ROOT"])
    cache = Path(os.environ.get("AIAUDIT_DEBOOTSTRAP_CACHE")
                 or Path(tempfile.gettempdir()) / "aiaudit-debootstrap")
    built = cache / "trixie-minbase-kernel-sshd"
    if (cache / f"{built.name}.complete").exists():
        return built
    return Path("/tmp/e27k/trixie")


TRIXIE = _trixie_root()

DEBIAN_MAIN = """Include /etc/ssh/sshd_config.d/*.conf
KbdInteractiveAuthentication no
UsePAM yes
X11Forwarding yes
PrintMotd no
AcceptEnv LANG LC_*
Subsystem sftp /usr/lib/openssh/sftp-server
"""
"""Debian's shipped ``/etc/ssh/sshd_config`` (its comment lines left out)."""

CONFIGS: dict[str, dict[str, str]] = {
    "debian-stock": {},
    "hardened-dropin": {"50-site.conf": (
        "PermitRootLogin no\nPasswordAuthentication no\nPort 22\nPort 2222\n"
        "AddressFamily inet\nCiphers -chacha20-poly1305@openssh.com\n"
        "PubkeyAcceptedAlgorithms +ssh-rsa\nLogLevel VERBOSE\n")},
    "match-and-listen": {"10-match.conf": (
        "ListenAddress 127.0.0.1\nListenAddress [::1]:2200\nIPQoS throughput\n"
        "Match User alice Address 10.0.0.0/8\n  PasswordAuthentication no\n"
        "  IPQoS af21\n  MaxSessions 2\n")},
    "inet6-algorithms": {"20-alg.conf": (
        "AddressFamily inet6\nKexAlgorithms curve25519-sha256\n"
        "HostKeyAlgorithms ^ssh-ed25519\nCASignatureAlgorithms ssh-ed25519\n"
        "DebianBanner no\n")},
    "localport": {"30-lport.conf": (
        "Port 22\nPort 2222\nMatch LocalPort 2222\n  PermitRootLogin no\n"
        "  PasswordAuthentication no\n")},
}
CONNECTIONS = ("user=root,host=h.example,addr=1.2.3.4,lport=22",
               "user=alice,host=w.example,addr=10.0.0.5,laddr=10.0.0.1,lport=2222")


def _package_version(status: Path) -> str:
    """``Version:`` of ``openssh-server`` in a dpkg status file."""
    block = status.read_text().split("\nPackage: openssh-server\n", 1)[1].split("\n\n", 1)[0]
    return next(ln.split(": ", 1)[1] for ln in block.splitlines()
                if ln.startswith("Version: "))


def _root(tmp: Path, files: dict[str, str], version: str, hostkey: str) -> Path:
    """A root with Debian's main file, the drop-ins and ``openssh-server`` ``version``."""
    r = tmp / "root"
    (r / "etc/ssh/sshd_config.d").mkdir(parents=True)
    (r / "etc/ssh/sshd_config").write_text(f"HostKey {hostkey}\n" + DEBIAN_MAIN)
    for name, text in files.items():
        (r / "etc/ssh/sshd_config.d" / name).write_text(text)
    (r / "var/lib/dpkg").mkdir(parents=True)
    (r / "var/lib/dpkg/status").write_text(
        f"Package: openssh-server\nStatus: install ok installed\nVersion: {version}\n\n")
    return r


def _ours(root: Path, spec: str) -> list[str]:
    text = render_text(view(Host(str(root), live=False), spec))
    return sorted(ln for ln in text.splitlines() if not ln.startswith("#"))


def _real(argv: list[str]) -> tuple[int, list[str], str]:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return p.returncode, sorted(p.stdout.splitlines()), p.stderr


@pytest.fixture(scope="module")
def keydir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_sshd()
    d = tmp_path_factory.mktemp("hostkey")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "hk")],
                   check=True, capture_output=True)
    return d


@pytest.mark.parametrize("spec", CONNECTIONS)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_installed_sshd_prints_the_same_lines(tmp_path: Path, keydir: Path, name: str,
                                              spec: str) -> None:
    version = _package_version(Path("/var/lib/dpkg/status"))
    root = _root(tmp_path, CONFIGS[name], version, str(keydir / "hk"))
    main = tmp_path / "main.conf"  # the Include pointed at the root, for the real sshd
    main.write_text((root / "etc/ssh/sshd_config").read_text().replace(
        "/etc/ssh/sshd_config.d", str(root / "etc/ssh/sshd_config.d")))
    rc, real, err = _real([SSHD, "-T", "-f", str(main), "-C", spec])
    assert rc == 0, err
    assert _ours(root, spec) == real


def test_stock_92_pubkey_algorithms_exclude_ssh_rsa(tmp_path: Path, keydir: Path) -> None:
    """The compiled-in list is known, so a rule "PubkeyAcceptedAlgorithms excludes
    ssh-rsa" has a value to pass on."""
    root = _root(tmp_path, {}, "1:9.2p1-2+deb12u10", str(keydir / "hk"))
    opt = view(Host(str(root), live=False), None)["options"]["PubkeyAcceptedAlgorithms"]
    assert "ssh-ed25519" in opt["value"].split(",")
    assert "ssh-rsa" not in opt["value"].split(",")


@pytest.mark.parametrize("spec", [None, "user=root,host=h,addr=1.2.3.4"])
def test_match_localport_without_lport_is_refused_as_sshd_does(
        tmp_path: Path, keydir: Path, spec: str | None) -> None:
    version = _package_version(Path("/var/lib/dpkg/status"))
    root = _root(tmp_path, CONFIGS["localport"], version, str(keydir / "hk"))
    main = tmp_path / "main.conf"
    main.write_text((root / "etc/ssh/sshd_config").read_text().replace(
        "/etc/ssh/sshd_config.d", str(root / "etc/ssh/sshd_config.d")))
    rc, _, err = _real([SSHD, "-T", "-f", str(main), *(["-C", spec] if spec else [])])
    assert rc == 255 and "'Match LocalPort' in configuration but 'lport'" in err
    with pytest.raises(UsageError, match="'lport' not in connection test specification"):
        view(Host(str(root), live=False), spec)
    res = cli("sshd", "--root", str(root), *(["--connection", spec] if spec else []))
    assert res.code == 2 and "30-lport.conf:3" in res.err and "Traceback" not in res.err


@pytest.fixture(scope="module")
def trixie(keydir: Path):
    """A scratch folder inside the Debian 13 root (removed afterwards), its path as the
    chroot sees it; skips without that root."""
    if not (TRIXIE / "usr/sbin/sshd").exists() or os.geteuid() != 0:
        pytest.skip(f"no Debian 13 root at {TRIXIE} (or not root for chroot)")
    inside = f"/tmp/aiaudit-view-oracle-{uuid.uuid4().hex[:8]}"
    (TRIXIE / inside.lstrip("/")).mkdir(parents=True)
    shutil.copy(keydir / "hk", TRIXIE / inside.lstrip("/") / "hk")
    (TRIXIE / "run/sshd").mkdir(parents=True, exist_ok=True)
    yield inside
    shutil.rmtree(TRIXIE / inside.lstrip("/"), ignore_errors=True)


@pytest.mark.parametrize("spec", CONNECTIONS)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_debian13_sshd_prints_the_same_lines(tmp_path: Path, trixie: str, name: str,
                                             spec: str) -> None:
    version = _package_version(TRIXIE / "var/lib/dpkg/status")
    root = _root(tmp_path, CONFIGS[name], version, f"{trixie}/hk")
    scratch = TRIXIE / trixie.lstrip("/") / name
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(root / "etc/ssh/sshd_config.d", scratch / "d")
    (scratch / "main.conf").write_text((root / "etc/ssh/sshd_config").read_text().replace(
        "/etc/ssh/sshd_config.d", f"{trixie}/{name}/d"))
    rc, real, err = _real(["chroot", str(TRIXIE), "/usr/sbin/sshd", "-T", "-f",
                           f"{trixie}/{name}/main.conf", "-C", spec])
    assert rc == 0, err
    assert _ours(root, spec) == real


def test_stock_92_rule_pubkey_excludes_ssh_rsa_passes(tmp_path: Path) -> None:
    """The same through the check a ruleset uses (no file sets the option)."""
    from aiaudit.core.model import Status
    from tests.helpers import run_check

    root = _root(tmp_path, {}, "1:9.2p1-2+deb12u10", "/etc/ssh/ssh_host_ed25519_key")
    params = {"keyword": "PubkeyAcceptedAlgorithms", "excludes": ["ssh-rsa"]}
    (r,) = run_check("ssh.sshd_option", root, params)
    assert r.status is Status.PASS, r.message
    (r,) = run_check("ssh.sshd_option", root, {**params, "excludes": ["ssh-ed25519"]})
    assert r.status is Status.FAIL, r.message
