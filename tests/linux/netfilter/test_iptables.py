"""iptables-save format: hand-checked decisions, and the real iptables as oracle
(iptables-restore in a network namespace, then iptables-save and nft -j list ruleset)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.netfilter import iptables as ipt
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.netfilter import nft
from tests.helpers import FIXTURES
from tests.netns import netns, require, run_in

V4 = (FIXTURES / "iptables" / "rules.v4").read_text()
V6 = (FIXTURES / "iptables" / "rules.v6").read_text()
A, D = nf.Outcome.ACCEPT, nf.Outcome.DROP


def outcome(rs: nf.Ruleset, fam: int, proto: str, port: int) -> nf.Outcome:
    return nf.decide(rs, nf.Probe(fam, proto, port)).outcome


def test_policies_rules_and_lines() -> None:
    rs = ipt.parse(V4, 4, "/etc/iptables/rules.v4")
    inp = rs.chains[("ip", "filter", "INPUT")]
    assert (inp.hook, inp.prio, inp.policy, inp.policy_line) == ("input", 0, "drop", 3)
    assert rs.chains[("ip", "nat", "INPUT")].prio == 100
    assert rs.chains[("ip", "filter", "services")].hook is None
    assert inp.rules[3].line == 10 and inp.rules[3].source == "/etc/iptables/rules.v4"


@pytest.mark.parametrize(("proto", "port", "want"), [
    ("tcp", 22, A), ("tcp", 80, A), ("tcp", 443, A), ("udp", 60500, A),
    ("tcp", 8888, D), ("tcp", 9100, D), ("tcp", 6006, D), ("tcp", 40961, D), ("udp", 53, D),
])
def test_decisions_v4(proto: str, port: int, want: nf.Outcome) -> None:
    assert outcome(ipt.parse(V4, 4, "x"), 4, proto, port) is want


def test_decisions_v6_policy_accept() -> None:
    rs = ipt.parse(V6, 6, "x")
    assert outcome(rs, 6, "tcp", 23) is D
    assert outcome(rs, 6, "tcp", 8888) is A
    assert not rs.input_chains(4)


@pytest.mark.parametrize("bad", ["-A INPUT -j ACCEPT\n", "*filter\n:INPUT DROP\n",
                                 "*filter\n-A NOPE -j ACCEPT\nCOMMIT\n",
                                 '*filter\n:INPUT DROP [0:0]\n-A INPUT -m comment --comment "x\n'
                                 "COMMIT\n", "*filter\n:INPUT\nCOMMIT\n"])
def test_invalid(bad: str) -> None:
    with pytest.raises(ParseError):
        ipt.parse(bad, 4, "x")


def test_variant() -> None:
    assert ipt.variant("iptables v1.8.9 (nf_tables)") == "nf_tables"
    assert ipt.variant("iptables v1.8.9 (legacy)") == "legacy"
    assert ipt.variant("iptables v1.6.1") == "legacy"
    assert ipt.variant("") is None


@given(st.text())
def test_any_text_parses_or_raises_parse_error(text: str) -> None:
    try:
        ipt.parse(text, 4, "x")
    except ParseError:
        pass


@given(st.lists(st.sampled_from(["*filter", ":INPUT DROP [0:0]", ":x - [0:0]", "COMMIT",
                                 "-A INPUT -p tcp --dport 22 -j ACCEPT", "-A INPUT -j x",
                                 "-A x -j RETURN", "-A INPUT ! -i lo -j DROP", "-P INPUT ACCEPT",
                                 "-A INPUT -m foo --bar 1 -j ACCEPT", "# c"]), max_size=12))
def test_any_line_mix(lines: list[str]) -> None:
    try:
        rs = ipt.parse("\n".join(lines), 4, "x")
    except ParseError:
        return
    nf.decide(rs, nf.Probe(4, "tcp", 22))


@pytest.mark.oracle
def test_real_iptables_roundtrip_and_nft_view() -> None:
    require("iptables-restore", "iptables-save")
    with netns("ipt") as ns:
        run_in(ns, "iptables-restore", stdin=V4)
        run_in(ns, "ip6tables-restore", stdin=V6)
        saved4 = run_in(ns, "iptables-save")
        saved6 = run_in(ns, "ip6tables-save")
        version = run_in(ns, "iptables", "-V")
        nft_json = run_in(ns, "nft", "-j", "list", "ruleset") \
            if ipt.variant(version) == "nf_tables" else None
    mine = ipt.parse(V4, 4, "file")
    mine.merge(ipt.parse(V6, 6, "file6"))
    theirs = ipt.parse(saved4, 4, "iptables-save")
    theirs.merge(ipt.parse(saved6, 6, "ip6tables-save"))
    probes = [nf.Probe(f, p, port) for f in (4, 6) for p in ("tcp", "udp")
              for port in (1, 22, 23, 80, 443, 6006, 8888, 9100, 60000, 61000, 61001, 40961)]
    for pr in probes:
        assert nf.decide(mine, pr).outcome is nf.decide(theirs, pr).outcome, pr
    if nft_json is not None:
        view = nft.parse_json(nft_json)
        for pr in probes:
            got = nf.decide(view, pr).outcome
            if got is not nf.Outcome.MAYBE:  # xt matches (conntrack, multiport) are unknown
                assert got is nf.decide(mine, pr).outcome, pr


def test_insert_goes_first() -> None:
    rs = ipt.parse("*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp --dport 22 -j ACCEPT\n"
                   "-I INPUT 1 -p tcp -j DROP\nCOMMIT\n", 4, "x")
    assert outcome(rs, 4, "tcp", 22) is D and outcome(rs, 4, "udp", 22) is A


def test_dnat_recorded() -> None:
    rs = ipt.parse("*nat\n:PREROUTING ACCEPT [0:0]\n:DOCKER - [0:0]\n"
                   "-A DOCKER ! -i docker0 -p tcp -m tcp --dport 8888 -j DNAT "
                   "--to-destination 172.17.0.2:8888\nCOMMIT\n", 4, "/etc/iptables/rules.v4")
    assert rs.dnat and "--dport 8888" in rs.dnat[0] and "rules.v4:4" in rs.dnat[0]
