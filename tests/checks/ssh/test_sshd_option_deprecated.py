"""Rules on deprecated sshd keywords (``Protocol``, ``RhostsRSAAuthentication``,
``UsePrivilegeSeparation``): judged on sshd's effective behaviour, with the warning the real
``sshd -t`` prints."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aiaudit.core.model import Status
from aiaudit.linux.sshd import deprecated as dep
from tests.helpers import run_check
from tests.linux.sshd.sshd_corpus import SSHD, require_sshd

MAIN = "/etc/ssh/sshd_config"


@pytest.mark.parametrize("text,params,want", [
    ("Protocol 2\n", {"keyword": "Protocol", "op": "eq", "value": 2}, "pass"),
    ("Protocol 1\n", {"keyword": "Protocol", "op": "eq", "value": 2}, "pass"),  # ignored
    ("", {"keyword": "Protocol", "op": "eq", "value": 2}, "pass"),
    ("RhostsRSAAuthentication yes\n", {"keyword": "RhostsRSAAuthentication", "op": "eq",
                                       "value": "no"}, "pass"),
    ("UsePrivilegeSeparation no\n", {"keyword": "UsePrivilegeSeparation", "op": "in",
                                     "value": ["yes", "sandbox"]}, "pass"),
    ("UseLogin yes\n", {"keyword": "UseLogin", "op": "eq", "value": "yes"}, "fail"),
    ("ServerKeyBits 512\n", {"keyword": "ServerKeyBits", "min": 2048}, "skip"),
])
def test_effective_behaviour(make_root, text: str, params, want: str) -> None:
    [r] = run_check("ssh.sshd_option", make_root({MAIN: text}), params)
    assert r.status.value == want, r.message


def test_message_names_the_warning_and_line(make_root) -> None:
    root = make_root({MAIN: "Port 22\nRhostsRSAAuthentication yes\n"})
    [r] = run_check("ssh.sshd_option", root, {"keyword": "rhostsrsaauthentication",
                                              "op": "eq", "value": "no"})
    assert r.subject == "RhostsRSAAuthentication"
    assert ("`etc/ssh/sshd_config line 2: Deprecated option RhostsRSAAuthentication`"
            in r.message)
    assert r.evidence[0].source == "etc/ssh/sshd_config:2"
    [p] = run_check("ssh.sshd_option", make_root({MAIN: "Protocol 2\n"}),
                    {"keyword": "Protocol", "op": "eq", "value": 2})
    assert "debug2 only (sshd -t is silent)" in p.message and "protocol 2 only" in p.message


def test_missing_argument_is_still_an_error(make_root) -> None:
    [r] = run_check("ssh.sshd_option", make_root({MAIN: "Protocol\n"}),
                    {"keyword": "Protocol", "op": "eq", "value": 2})
    assert r.status is Status.ERROR and 'no argument after keyword "Protocol"' in r.message


@pytest.mark.oracle
@pytest.mark.parametrize("kw", ["Protocol", "RhostsRSAAuthentication", "RSAAuthentication",
                                "UsePrivilegeSeparation", "UseLogin", "ServerKeyBits",
                                "KerberosGetAFSToken"])
def test_warning_is_what_sshd_t_prints(make_root, tmp_path: Path, kw: str) -> None:
    """sshd -t accepts the keyword (exit 0) and prints exactly the warning our message
    quotes (nothing for Protocol)."""
    require_sshd()
    key = tmp_path / "hk"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    conf = tmp_path / "sshd_config"
    conf.write_text(f"{kw} yes\n")
    p = subprocess.run([SSHD, "-t", "-f", str(conf), "-h", str(key)], capture_output=True,
                       text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    [r] = run_check("ssh.sshd_option", make_root({MAIN: f"{kw} yes\n"}),
                    {"keyword": kw, "op": "ne", "value": "something"})
    assert r.status is not Status.ERROR
    printed = p.stderr.strip().replace(str(conf), "etc/ssh/sshd_config")
    if kw.lower() in dep.SILENT:
        assert printed == "" and "sshd -t is silent" in r.message
    else:
        assert printed and f"`{printed}`" in r.message


RULESET = """\
ruleset: deprecated-keyword
version: "1"
rules:
  - id: SSH-PRIVSEP
    check: ssh.sshd_option
    severity: high
    title: Ensure privilege separation is off (a rule written for OpenSSH 6)
    params: {keyword: UsePrivilegeSeparation, op: eq, value: "no"}
"""


def test_failing_rule_on_deprecated_keyword_is_reported(make_root, tmp_path: Path) -> None:
    """Regression: the failure's remediation carried a Snippet where a command string
    belongs (``Snippet.command(RELOAD)``), so every reporter failed and the scan exited 2
    without a report.  Now the scan exits 1 (findings) with both reports written, and the
    remediation is the manual step, then sshd's guarded reload."""
    import json

    from tests.helpers import cli

    root = make_root({MAIN: "UsePrivilegeSeparation no\n"})
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULESET)
    text, js = tmp_path / "report.txt", tmp_path / "report.json"
    res = cli("scan", "--ruleset", str(rules), "--root", str(root),
              "--output", f"text:{text}", "--output", f"json:{js}")
    assert res.code == 1, res.err
    assert "SSH-PRIVSEP" in text.read_text()
    [r] = json.loads(js.read_text())["results"]
    assert (r["rule_id"], r["status"], r["actual"]) == ("SSH-PRIVSEP", "fail", "sandbox")
    rem = r["remediation"]
    assert "cannot be met by setting it" in rem["summary"]
    assert rem["manual"] == rem["summary"]  # a person removes the line: no snippet can
    assert [(s["kind"], s["content"]) for s in rem["snippets"]] == [("apply", "sshd")]


def test_deprecated_remediation_snippets_are_well_typed(make_root) -> None:
    """Every snippet's content is text (the reporters' contract), with and without a line
    carrying the keyword (without one there is nothing to reload)."""
    for text, snippets in (("UseLogin yes\n", [("apply", "sshd")]), ("Port 22\n", [])):
        [r] = run_check("ssh.sshd_option", make_root({MAIN: text}),
                        {"keyword": "UseLogin", "op": "eq", "value": "yes"})
        assert r.status is Status.FAIL and r.remediation is not None
        assert all(isinstance(s.content, str) for s in r.remediation.snippets)
        assert [(s.kind, s.content) for s in r.remediation.snippets] == snippets
        assert r.remediation.manual
