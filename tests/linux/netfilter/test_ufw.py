"""ufw: conf files and ``### tuple ###`` markers (format of ufw 0.36 as Debian ships it)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.netfilter import ufw

USER_RULES = """*filter
:ufw-user-input - [0:0]
### RULES ###

### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in
-A ufw-user-input -p tcp --dport 22 -j ACCEPT

### tuple ### limit tcp 2222 0.0.0.0/0 any 0.0.0.0/0 in comment=61646d696e
-A ufw-user-input -p tcp --dport 2222 -j ufw-user-limit-accept

### tuple ### allow any 60000:61000 0.0.0.0/0 any 0.0.0.0/0 in
### tuple ### allow tcp 80,443 0.0.0.0/0 any 0.0.0.0/0 Apache%20Full - in
### tuple ### allow tcp 8888 0.0.0.0/0 any 10.0.0.0/8 in
### tuple ### allow tcp 9100 0.0.0.0/0 any 0.0.0.0/0 in_eth1
### tuple ### deny tcp 6006 0.0.0.0/0 any 0.0.0.0/0 in
### tuple ### allow tcp 6006 0.0.0.0/0 any 0.0.0.0/0 in
### tuple ### allow_log tcp 5000 0.0.0.0/0 any 0.0.0.0/0 out
### tuple ### route:allow tcp 7000 0.0.0.0/0 any 0.0.0.0/0 in
COMMIT
"""


def test_conf() -> None:
    conf = ufw.parse_conf('# c\nENABLED=yes\nIPV6="yes"\nDEFAULT_INPUT_POLICY="DROP"\nx\n')
    assert conf["ENABLED"] == ufw.Setting("yes", 2)
    assert conf["IPV6"].value == "yes" and conf["DEFAULT_INPUT_POLICY"].value == "DROP"


def test_tuples() -> None:
    ts = ufw.parse_tuples(USER_RULES, "/etc/ufw/user.rules")
    assert [t.action for t in ts][:2] == ["allow", "limit"]
    assert ts[0].line == 5 and ts[0].dport == "22" and ts[0].direction == "in"
    assert ts[3].dport == "80,443" and ts[3].direction == "in"   # app rule: 9 fields
    assert ts[-1].route and ts[-2].direction == "out"


@pytest.mark.parametrize(("proto", "port", "want"), [
    ("tcp", 22, "accept"), ("tcp", 2222, "accept"), ("udp", 60500, "accept"),
    ("tcp", 60500, "accept"), ("tcp", 443, "accept"), ("tcp", 8888, "drop"),
    ("tcp", 9100, "drop"), ("tcp", 6006, "drop"), ("tcp", 5000, "drop"), ("tcp", 7000, "drop"),
    ("tcp", 40961, "drop"),
])
def test_ruleset(proto: str, port: int, want: str) -> None:
    rs = ufw.to_ruleset("DROP", "/etc/default/ufw", 7,
                        [(4, "/etc/ufw/user.rules", ufw.parse_tuples(USER_RULES, "x"))])
    assert str(nf.decide(rs, nf.Probe(4, proto, port)).outcome) == want
    assert not rs.input_chains(6)  # no user6.rules given: IPv6 not filtered by ufw


def test_accept_policy() -> None:
    rs = ufw.to_ruleset("ACCEPT", "/etc/default/ufw", 7, [(6, "/etc/ufw/user6.rules", [])])
    assert nf.decide(rs, nf.Probe(6, "tcp", 1)).outcome is nf.Outcome.ACCEPT


@pytest.mark.parametrize("bad", ["### tuple ### allow tcp 22\n",
                                 "### tuple ### permit tcp 22 0.0.0.0/0 any 0.0.0.0/0 in\n"])
def test_bad_tuples(bad: str) -> None:
    with pytest.raises(ParseError):
        ufw.parse_tuples(bad, "x")


@given(st.text())
def test_any_text(text: str) -> None:
    ufw.parse_conf(text)
    try:
        ufw.parse_tuples(text, "x")
        ufw.parse_tuples("### tuple ###" + text, "x")
    except ParseError:
        pass
