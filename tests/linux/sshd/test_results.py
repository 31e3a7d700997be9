"""What the sshd checks report (:mod:`aiaudit.linux.sshd.results`): the global setting and
each Match block that decides the keyword, evidence, errors and the version caveat."""

from __future__ import annotations

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Status
from aiaudit.linux.sshd import config as sp
from aiaudit.linux.sshd.results import (
    block_subject,
    error_result,
    evaluate,
    evidence,
    version_note,
)

TEXT = ("PasswordAuthentication no\n"
        "Match User alice\n  PasswordAuthentication yes\n"
        "Match User bob\n  Banner /x\n"
        "Match User !root\n  PasswordAuthentication yes\n"
        "Match all\n  MaxAuthTries 3\n")


def test_global_then_each_block_that_decides() -> None:
    got = list(evaluate(sp.parse_text(TEXT), "PasswordAuthentication", True))
    shown = [(None if b is None else b.text, getattr(s, "value", s)) for b, s in got]
    assert shown == [(None, "no"), ("User alice", "yes")]  # bob sets nothing; !root: nobody
    assert [b for b, _ in evaluate(sp.parse_text(TEXT), "PasswordAuthentication", False)] \
        == [None]


def test_match_all_is_global() -> None:
    [(block, s)] = list(evaluate(sp.parse_text(TEXT), "MaxAuthTries", True))
    assert block is None and isinstance(s, sp.Setting) and s.value == "3"


def test_refused_block_pass_gives_its_error() -> None:
    text = ("Match User alice\n  AuthenticationMethods publickey\n"
            "  AuthenticationMethods any\n")
    got = list(evaluate(sp.parse_text(text), "AuthenticationMethods", True))
    assert isinstance(got[1][1], ParseError) and got[1][1].line == 3


def test_block_subject_ignores_spacing() -> None:
    [block] = sp.parse_text("Match   User  alice\n  X11Forwarding no\n").blocks
    assert block_subject(block) == "Match User alice"


def test_evidence_of_line_and_default() -> None:
    cfg = sp.parse_text("X11Forwarding no\n")
    [line] = evidence(cfg.value("X11Forwarding"))
    assert line.source == "etc/ssh/sshd_config:1" and line.value == "X11Forwarding no"
    [dflt] = evidence(cfg.value("MaxAuthTries"))
    assert (dflt.kind, dflt.value) == ("default", "6")


def test_error_result_names_file_and_line() -> None:
    r = error_result(ParseError("bad", source="/etc/ssh/sshd_config", line=4), "X")
    assert r.status is Status.ERROR and r.evidence[0].source == "etc/ssh/sshd_config:4"
    assert r.message.startswith("sshd would refuse this configuration: ")


def test_version_note_only_for_old_openssh(make_root) -> None:
    def host(version: str) -> Host:
        status = ("Package: openssh-server\nStatus: install ok installed\n"
                  f"Architecture: amd64\nVersion: {version}\n\n")
        return Host(str(make_root({"/var/lib/dpkg/status": status})))

    assert "older than 8.7" in version_note(host("1:8.2p1-4ubuntu0.11"))
    assert version_note(host("1:9.2p1-2+deb12u3")) == ""
    assert version_note(Host(str(make_root({})))) == ""
