"""``ssh.sshd_option`` on offline roots, and one live run against the real ``sshd -T``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aiaudit.core.model import Status
from tests.helpers import run_check
from tests.linux.sshd.sshd_corpus import require_sshd

CHECK = "ssh.sshd_option"


MAIN = "/etc/ssh/sshd_config"


DEBIAN_TOP = ("Include /etc/ssh/sshd_config.d/*.conf\nKbdInteractiveAuthentication no\n"
              "UsePAM yes\nX11Forwarding yes\nPrintMotd no\nAcceptEnv LANG LC_*\n"
              "Subsystem sftp /usr/lib/openssh/sftp-server\n")


def opt(root: Path, keyword: str, op: str, value, **kw):
    return run_check(CHECK, root, {"keyword": keyword, "op": op, "value": value, **kw})


def by_subject(results):
    return {r.subject: r for r in results}


def test_pass_and_fail_with_evidence(make_root) -> None:
    root = make_root({MAIN: DEBIAN_TOP,
                      "/etc/ssh/sshd_config.d/50-cloud-init.conf": "PasswordAuthentication no\n"})
    [ok] = opt(root, "PasswordAuthentication", "eq", "no")
    assert ok.status is Status.PASS
    assert ok.evidence[0].source == "etc/ssh/sshd_config.d/50-cloud-init.conf:1"
    [bad] = opt(root, "x11forwarding", "eq", "No")
    assert bad.status is Status.FAIL and bad.subject == "X11Forwarding"
    assert bad.evidence[0].source == "etc/ssh/sshd_config:4"
    [dflt] = opt(root, "MaxAuthTries", "le", 4)
    assert dflt.status is Status.FAIL and dflt.actual == "6"
    assert dflt.evidence[0].kind == "default"


def test_param_values_are_normalised(make_root) -> None:
    root = make_root({MAIN: "PermitRootLogin without-password\nLoginGraceTime 1m\n"})
    [r] = opt(root, "PermitRootLogin", "in", ["no", "prohibit-password"])
    assert r.status is Status.PASS
    [g] = opt(root, "LoginGraceTime", "le", "1m")
    assert g.status is Status.PASS and g.actual == "60"


def test_dropin_remediation_wins_when_applied(make_root) -> None:
    root = make_root({MAIN: DEBIAN_TOP})
    [bad] = opt(root, "X11Forwarding", "eq", "no")
    snip = next(s for s in bad.remediation.snippets if s.kind == "file")
    assert snip.path == "/etc/ssh/sshd_config.d/00-aiaudit.conf"
    assert snip.content == "X11Forwarding no\n"
    assert any((s.kind, s.content) == ("apply", "sshd") for s in bad.remediation.snippets)
    target = root / snip.path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(snip.content)
    [fixed] = opt(root, "X11Forwarding", "eq", "no")
    assert fixed.status is Status.PASS


@pytest.mark.parametrize("main, extra, why", [
    ("X11Forwarding yes\n", {}, "no Include of"),
    ("X11Forwarding yes\nInclude /etc/ssh/sshd_config.d/*.conf\n", {}, "comes after"),
    (DEBIAN_TOP, {"/etc/ssh/sshd_config.d/00-a.conf": "X11Forwarding yes\n"},
     "00-a.conf:1 is read before it"),
])
def test_dropin_that_would_lose_is_not_proposed(make_root, main, extra, why) -> None:
    root = make_root({MAIN: main, **extra})
    [bad] = opt(root, "X11Forwarding", "eq", "no")
    assert bad.status is Status.FAIL
    assert why in bad.remediation.summary
    assert all(s.kind != "file" for s in bad.remediation.snippets)


def test_each_weakening_match_block_is_a_finding(make_root) -> None:
    root = make_root({MAIN: "PasswordAuthentication no\nMatch User alice\n"
                            "  PasswordAuthentication yes\nMatch Group admins\n"
                            "  PasswordAuthentication no\nMatch User bob\n  Banner /x\n"})
    res = by_subject(opt(root, "PasswordAuthentication", "eq", "no"))
    assert set(res) == {"PasswordAuthentication", "Match User alice",
                        "Match Group admins"}
    alice = res["Match User alice"]
    assert alice.status is Status.FAIL and alice.evidence[0].source == "etc/ssh/sshd_config:3"
    assert "drop-in cannot fix" in alice.remediation.summary
    assert res["Match Group admins"].status is Status.PASS
    only_global = opt(root, "PasswordAuthentication", "eq", "no", match_blocks=False)
    assert [r.subject for r in only_global] == ["PasswordAuthentication"]


def test_invalid_config_is_an_error_naming_the_line(make_root) -> None:
    root = make_root({MAIN: DEBIAN_TOP,
                      "/etc/ssh/sshd_config.d/10-x.conf": "PasswordAuthentication no\n"
                                                          "PermitRootLogin maybe\n"})
    [r] = opt(root, "PasswordAuthentication", "eq", "no")
    assert r.status is Status.ERROR
    assert r.evidence[0].source == "etc/ssh/sshd_config.d/10-x.conf:2"
    assert "refuse" in r.message


def test_relative_include_is_rerooted(make_root) -> None:
    root = make_root({MAIN: "Include sshd_config.d/*.conf\n",
                      "/etc/ssh/sshd_config.d/a.conf": "MaxAuthTries 2\n"})
    [r] = opt(root, "MaxAuthTries", "le", 4)
    assert r.status is Status.PASS and r.evidence[0].source == "etc/ssh/sshd_config.d/a.conf:1"


def test_include_escaping_the_root_finds_nothing(make_root) -> None:
    root = make_root({MAIN: "Include ../../../../etc/ssh/sshd_config.d/*.conf\n"
                            "MaxAuthTries 9\n"})
    [r] = opt(root, "MaxAuthTries", "le", 4)
    assert r.status is Status.FAIL and r.actual == "9"


def test_not_installed_skips(make_root) -> None:
    root = make_root({"/etc/os-release": "ID=debian\n"})
    [r] = opt(root, "PasswordAuthentication", "eq", "no")
    assert r.status is Status.SKIP and "openssh-server is not installed" in r.message


def test_installed_without_config_is_an_error(make_root) -> None:
    status = ("Package: openssh-server\nStatus: install ok installed\nArchitecture: amd64\n"
              "Version: 1:9.2p1-2+deb12u3\n\n")
    root = make_root({"/var/lib/dpkg/status": status})
    [r] = opt(root, "PasswordAuthentication", "eq", "no")
    assert r.status is Status.ERROR and "sshd will not start" in r.message


def test_unknown_keyword_param_is_an_error(make_root) -> None:
    root = make_root({MAIN: "Port 22\n"})
    [r] = opt(root, "NoSuchThing", "eq", "no")
    assert r.status is Status.ERROR


def test_live_matches_sshd_T() -> None:
    """Live scan of this machine: the check's value is what the real `sshd -T` prints."""
    if not os.path.exists(MAIN) and not os.environ.get("CI"):
        pytest.skip("no /etc/ssh/sshd_config on this machine")
    require_sshd()
    p = subprocess.run(["/usr/sbin/sshd", "-T"], capture_output=True, text=True, timeout=20)
    if p.returncode != 0:
        [r] = run_check(CHECK, "/", {"keyword": "PasswordAuthentication", "op": "eq",
                                     "value": "no"}, live=True)
        assert r.status is Status.ERROR, p.stderr
        return
    printed = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    for key in ("PasswordAuthentication", "X11Forwarding", "MaxAuthTries", "UsePAM"):
        rs = run_check(CHECK, "/", {"keyword": key, "op": "eq", "value": printed[key.lower()],
                                    "match_blocks": False}, live=True)
        assert [r.status for r in rs] == [Status.PASS], (key, rs[0].message)


def test_dropin_linked_to_dev_null_reads_as_empty(make_root) -> None:
    root = make_root({MAIN: DEBIAN_TOP + "PasswordAuthentication no\n"},
                     links={"/etc/ssh/sshd_config.d/50-cloud-init.conf": "/dev/null"})
    [r] = opt(root, "PasswordAuthentication", "eq", "no")
    assert r.status is Status.PASS


def test_fifo_in_dropin_dir_is_an_error_not_a_hang(make_root) -> None:
    root = make_root({MAIN: DEBIAN_TOP}, dirs=("/etc/ssh/sshd_config.d",))
    os.mkfifo(root / "etc/ssh/sshd_config.d/x.conf")
    [r] = opt(root, "PasswordAuthentication", "eq", "no")
    assert r.status is Status.ERROR and "x.conf" in r.message


def test_value_from_match_all_is_global_and_blocks_the_dropin(make_root) -> None:
    root = make_root({MAIN: DEBIAN_TOP + "Match all\n  MaxAuthTries 8\n"})
    [r] = opt(root, "MaxAuthTries", "le", 4)
    assert r.subject == "MaxAuthTries" and r.actual == "8"
    assert "inside `Match all`" in r.remediation.summary
    assert all(s.kind != "file" for s in r.remediation.snippets)


def test_old_openssh_gets_a_note(make_root) -> None:
    status = ("Package: openssh-server\nStatus: install ok installed\nArchitecture: amd64\n"
              "Version: 1:8.2p1-4ubuntu0.11\n\n")
    root = make_root({MAIN: "PasswordAuthentication no\n", "/var/lib/dpkg/status": status})
    [r] = opt(root, "PasswordAuthentication", "eq", "no")
    assert r.status is Status.PASS and "older than 8.7" in r.message


def test_block_in_file_included_twice_is_reported_once(make_root) -> None:
    root = make_root({MAIN: "Include /etc/ssh/m.conf\nInclude /etc/ssh/m.conf\n",
                      "/etc/ssh/m.conf": "Match User alice\n  X11Forwarding yes\n"})
    res = opt(root, "X11Forwarding", "eq", "no")
    assert [(r.subject, r.status) for r in res] == [
        ("X11Forwarding", Status.PASS),
        ("Match User alice", Status.FAIL)]


def test_include_of_a_directory_reads_as_empty(make_root) -> None:
    root = make_root({MAIN: "Include /etc/ssh/sshd_config.d\nX11Forwarding no\n"},
                     dirs=("/etc/ssh/sshd_config.d",))
    [r] = opt(root, "X11Forwarding", "eq", "no")
    assert r.status is Status.PASS


def test_dangling_dropin_link_is_an_error(make_root) -> None:
    root = make_root({MAIN: DEBIAN_TOP},
                     links={"/etc/ssh/sshd_config.d/10-gone.conf": "/etc/ssh/nowhere.conf"})
    [r] = opt(root, "X11Forwarding", "eq", "no")
    assert r.status is Status.ERROR and "10-gone.conf" in r.message


def test_block_that_breaks_reparse_is_an_error_for_that_block(make_root) -> None:
    # "any" after an earlier AuthenticationMethods of the same pass: fatal for connections
    # matching the block (sshd -T -C user=alice exits 255), fine at start-up
    root = make_root({MAIN: "PasswordAuthentication no\nMatch User alice\n"
                            "  PasswordAuthentication yes\n"
                            "  AuthenticationMethods publickey\n  AuthenticationMethods any\n"})
    res = by_subject(opt(root, "PasswordAuthentication", "eq", "no"))
    assert res["PasswordAuthentication"].status is Status.PASS
    blk = res["Match User alice"]
    assert blk.status is Status.ERROR and "drop connections" in blk.message
    assert blk.evidence[0].source == "etc/ssh/sshd_config:5"


def test_unset_option_reads_unset(make_root) -> None:
    root = make_root({MAIN: "Port 22\n"})
    [r] = opt(root, "RDomain", "eq", "x")
    assert r.status is Status.FAIL and "RDomain is unset" in r.message
