"""What changes with the OpenSSH release (issue 27: Debian 13 ships 10.0p1): keywords and
Match criteria a release does not know are refused as its sshd refuses them, new ones are
known; ``Match version``; ``DisableForwarding`` turns X11 and agent forwarding off only
from 10.0 (CVE-2025-32728).  Each behaviour was observed with trixie's ``sshd -t`` /
``sshd -T`` (1:10.0p1-7+deb13u4) and this machine's 9.2p1;
``tests/checks/sysctl/test_debian13_root.py`` repeats the comparison on a debootstrap root."""

from __future__ import annotations

import pytest

from aiaudit.core.errors import ParseError
from aiaudit.core.model import Status
from aiaudit.linux.sshd import config as sp
from aiaudit.linux.sshd import defaults as sshd_defaults
from tests.helpers import run_check

R92, R100 = (9, 2), (10, 0)


def _load(text: str, release: tuple[int, int] | None, name: str = "") -> sp.SshdConfig:
    def read(p: str) -> str:
        if p == sp.MAIN_CONFIG:
            return text
        raise FileNotFoundError(p)
    return sp.load(read, lambda _p: (), release=release, release_name=name)


@pytest.mark.parametrize("line,since", [
    ("PerSourcePenalties crash:90", (9, 8)), ("PerSourcePenaltyExemptList 10.0.0.0/8", (9, 8)),
    ("PAMServiceName sshd", (9, 8)), ("SshdSessionPath /usr/lib/openssh/sshd-session", (9, 8)),
    ("RefuseConnection no", (9, 9)), ("SshdAuthPath /usr/lib/openssh/sshd-auth", (10, 0)),
])
def test_new_keywords_known_from_their_release(line: str, since: tuple[int, int]) -> None:
    with pytest.raises(ParseError, match="Bad configuration option"):
        _load(line + "\n", R92)
    _load(line + "\n", since)
    _load(line + "\n", None)  # release unknown: accepted, not a guessed error


def test_release_10_defaults_in_the_view() -> None:
    eff = _load("\n", R100).effective()
    assert eff["PerSourcePenalties"] == sp.PENALTIES_DEFAULT
    assert eff["RefuseConnection"] == "no" and eff["PAMServiceName"] == "sshd"


def test_subsystem_in_match_from_9_5() -> None:
    text = "Match User alice\nSubsystem sftp internal-sftp\n"
    with pytest.raises(ParseError, match="not allowed within a Match block"):
        _load(text, R92)
    _load(text, (9, 5))


@pytest.mark.parametrize("crit,since", [("invalid-user", (9, 9)),
                                        ("version OpenSSH_10.*", (10, 0))])
def test_new_match_criteria(crit: str, since: tuple[int, int]) -> None:
    text = f"Match {crit}\nX11Forwarding yes\n"
    with pytest.raises(ParseError, match="Unsupported Match attribute"):
        _load(text, R92)
    _load(text, since)


@pytest.mark.parametrize("pattern,applies", [("OpenSSH_10.*", True), ("OpenSSH_9.*", False),
                                             ("OpenSSH_10.0p1*", False),
                                             ("OpenSSH_10.0p2*", True)])
def test_match_version_is_decided_at_start_up(pattern: str, applies: bool) -> None:
    """sshd -T of trixie's 10.0p1 package (whose SSH_RELEASE is ``OpenSSH_10.0p2
    Debian-7+deb13u4``) applies the block with no connection given."""
    cfg = _load(f"Match version {pattern}\nX11Forwarding yes\n", R100,
                "OpenSSH_10.0p2 Debian-7+deb13u4")
    assert cfg.effective()["X11Forwarding"] == ("yes" if applies else "no")


def test_invalid_user_block_matches_no_modelled_connection() -> None:
    cfg = _load("Match invalid-user\nPermitRootLogin yes\n", R100)
    conn = sp.Connection(user="nosuchuser", host="h", addr="192.0.2.1")
    assert cfg.effective(conn)["PermitRootLogin"] == "prohibit-password"


def test_release_from_package_and_binary(make_root) -> None:
    assert sshd_defaults.release("1:10.0p1-7+deb13u4") == (
        (10, 0), "OpenSSH_10.0p1 Debian-7+deb13u4")
    assert sshd_defaults.release(None) == (None, "")
    from aiaudit.core.host import Host
    root = make_root({"/usr/sbin/sshd": b"\x7fELF\x00OpenSSH_10.0\x00OpenSSH_10.0p2 "
                      b"Debian-7+deb13u4\x00rest"})
    assert sshd_defaults.release_in_binary(Host(str(root))) == "OpenSSH_10.0p2 Debian-7+deb13u4"


def _ssh_root(make_root, version: str, conf: str):
    status = (f"Package: openssh-server\nStatus: install ok installed\nVersion: {version}\n")
    return make_root({"/etc/ssh/sshd_config": conf, "/var/lib/dpkg/status": status})


X11 = {"keyword": "X11Forwarding", "op": "eq", "value": "no"}
TCP = {"keyword": "AllowTcpForwarding", "op": "eq", "value": "no"}


@pytest.mark.parametrize("version,status", [("1:10.0p1-7+deb13u4", Status.PASS),
                                            ("1:9.2p1-2+deb12u6", Status.FAIL)])
def test_disable_forwarding_turns_x11_off_from_10(make_root, version, status) -> None:
    root = _ssh_root(make_root, version, "DisableForwarding yes\nX11Forwarding yes\n")
    [r] = run_check("ssh.sshd_option", root, X11)
    assert r.status is status
    if status is Status.PASS:
        assert "DisableForwarding yes (etc/ssh/sshd_config:1) turns it off" in r.message


def test_disable_forwarding_always_turned_tcp_off(make_root) -> None:
    root = _ssh_root(make_root, "1:9.2p1-2+deb12u6", "DisableForwarding yes\n")
    [r] = run_check("ssh.sshd_option", root, TCP)
    assert r.status is Status.PASS and r.actual == "no"


def test_sshd_10_keyword_is_an_error_on_9_2(make_root) -> None:
    root = _ssh_root(make_root, "1:9.2p1-2+deb12u6", "PerSourcePenalties crash:90\n")
    [r] = run_check("ssh.sshd_option", root, X11)
    assert r.status is Status.ERROR and "Bad configuration option" in r.message
    root = _ssh_root(make_root, "1:10.0p1-7+deb13u4", "PerSourcePenalties crash:90\n")
    [r] = run_check("ssh.sshd_option", root, X11)
    assert r.status is Status.PASS


@pytest.mark.parametrize("text,conn_items,global_items", [
    ("Subsystem sftp /a\nMatch user alice\nSubsystem sftp /b\n", ["sftp /b"], ["sftp /a"]),
    ("Subsystem sftp /a\nMatch user alice\nSubsystem other /b\n", ["other /b"], ["sftp /a"]),
    ("Subsystem sftp /a\nMatch user bob\nSubsystem other /b\n", ["sftp /a"], ["sftp /a"]),
    ("Subsystem sftp /a\nSubsystem sftp /b\n", ["sftp /a"], ["sftp /a"]),
])
def test_subsystem_on_10_as_sshd_T_prints_it(text, conn_items, global_items) -> None:
    """10.0p1's ``sshd -T`` (``-C user=alice``): a matching block's Subsystem list replaces
    the global one; a repeated name is ignored (first wins), where 9.2 refuses it."""
    cfg = _load(text, R100)
    conn = sp.Connection(user="alice", host="h", addr="192.0.2.1")
    assert cfg.effective(conn).get("Subsystem").items == conn_items
    assert cfg.effective().get("Subsystem").items == global_items


def test_repeated_subsystem_refused_by_9_2() -> None:
    with pytest.raises(ParseError, match="already defined"):
        _load("Subsystem sftp /a\nSubsystem sftp /b\n", R92)
