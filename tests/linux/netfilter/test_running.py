"""The running state (aiaudit.linux.netfilter.running) from canned command output: the
nft view, iptables-nft tables read from iptables-save, iptables-legacy rules merged, and
what goes wrong recorded as problems."""

from __future__ import annotations

from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.netfilter.running import load_running, running
from tests.helpers import FIXTURES
from tests.linux.netfilter.hosts import FakeCommands

IPT = FIXTURES / "iptables"
EMPTY = '{"nftables": [{"metainfo": {}}]}'


def test_nft_view_only(make_root) -> None:
    host = FakeCommands(make_root({"/proc/net/ip_tables_names": ""}),
                        {"nft -j list ruleset": (0, (FIXTURES / "nft" / "server.json")
                                                 .read_text(), "")})
    st = load_running(host)
    assert st.running and not st.problems and st.active() == ["nftables"]
    assert st.ruleset is not None and ("inet", "filter", "input") in st.ruleset.chains
    assert host.calls == ["nft -j list ruleset"]


def test_xt_tables_replaced_by_iptables_save(make_root) -> None:
    host = FakeCommands(make_root({}), {
        "nft -j list ruleset": (0, (IPT / "rules.v4.nft.json").read_text(), ""),
        "iptables -V": (0, "iptables v1.8.9 (nf_tables)\n", ""),
        "iptables-save": (0, (IPT / "rules.v4.saved").read_text(), "")})
    st = load_running(host)
    assert st.ruleset is not None and not st.problems
    assert any(n.startswith("iptables-save: used for iptables-nft table(s)") for n in st.notes)
    chain = st.ruleset.chains[("ip", "filter", "INPUT")]
    assert chain.source == "iptables-save" and chain.origin == "iptables"


def test_legacy_rules_are_merged_with_their_origin(make_root) -> None:
    rules = "*filter\n:INPUT DROP [0:0]\n-A INPUT -p tcp --dport 22 -j ACCEPT\nCOMMIT\n"
    host = FakeCommands(make_root({"/proc/net/ip_tables_names": "filter\n"}), {
        "nft -j list ruleset": (0, EMPTY, ""),
        "iptables -V": (0, "iptables v1.8.9 (nf_tables)\n", ""),
        "iptables-legacy-save": (0, rules, "")})
    st = load_running(host)
    assert st.active() == ["nftables", "iptables-legacy"]
    assert st.ruleset is not None
    assert {c.origin for c in st.ruleset.chains.values()} == {"iptables-legacy"}
    assert nf.decide(st.ruleset, nf.Probe(4, "tcp", 23)).outcome is nf.Outcome.DROP
    assert "ip6tables-legacy-save" not in host.calls  # no IPv6 legacy table


def test_problems_are_recorded(make_root) -> None:
    root = make_root({"/proc/net/ip_tables_names": "filter\n"})
    st = load_running(FakeCommands(root, {"nft -j list ruleset": (0, "{not json", "")}))
    assert st.problems and "not JSON" in st.problems[0] and not st.active()
    st = load_running(FakeCommands(root, {
        "nft -j list ruleset": (0, EMPTY, ""),
        "iptables -V": (0, "iptables v1.8.9 (legacy)\n", ""),
        "iptables-save": (1, "", "iptables-save: permission denied")}))
    assert st.problems == ["iptables-save: iptables-save: permission denied"]


def test_read_once_per_run(make_root) -> None:
    host = FakeCommands(make_root({}), {"nft -j list ruleset": (0, EMPTY, "")})
    assert running(host) is running(host)
    assert host.calls == ["nft -j list ruleset"]
