"""``ssh.sshd_kbdinteractive``: keyboard-interactive authentication with UsePAM, globally and
per Match block."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from tests.helpers import run_check

MAIN = "/etc/ssh/sshd_config"


@pytest.mark.parametrize("text, params, status", [
    ("KbdInteractiveAuthentication no\nUsePAM yes\n", {}, Status.PASS),
    ("UsePAM yes\n", {}, Status.FAIL),  # upstream default: kbd-interactive yes
    ("ChallengeResponseAuthentication yes\nKbdInteractiveAuthentication no\nUsePAM yes\n", {},
     Status.FAIL),
    ("KbdInteractiveAuthentication yes\nUsePAM no\n", {}, Status.PASS),
    ("UsePAM yes\nAuthenticationMethods publickey,keyboard-interactive\n", {}, Status.PASS),
    ("UsePAM yes\nAuthenticationMethods publickey,keyboard-interactive\n",
     {"allow_second_factor": False}, Status.FAIL),
    ("UsePAM yes\nAuthenticationMethods publickey keyboard-interactive\n", {}, Status.FAIL),
])
def test_kbdinteractive(make_root, text, params, status) -> None:
    root = make_root({MAIN: text})
    [r] = run_check("ssh.sshd_kbdinteractive", root, params)
    assert r.status is status, r.message
    if status is Status.FAIL:
        assert r.remediation is not None
        assert "password logins work" in r.message


def test_kbdinteractive_match_block(make_root) -> None:
    root = make_root({MAIN: "KbdInteractiveAuthentication no\nUsePAM yes\n"
                            "Match Address 192.168.0.0/16\n  KbdInteractiveAuthentication yes\n"})
    res = {r.subject: r for r in run_check("ssh.sshd_kbdinteractive", root)}
    assert res["KbdInteractiveAuthentication"].status is Status.PASS
    blk = res["Match Address 192.168.0.0/16"]
    assert blk.status is Status.FAIL and blk.evidence[0].source == "etc/ssh/sshd_config:4"


def test_not_installed_skips(make_root) -> None:
    root = make_root({"/etc/os-release": "ID=debian\n"})
    [k] = run_check("ssh.sshd_kbdinteractive", root)
    assert k.status is Status.SKIP and "openssh-server is not installed" in k.message
