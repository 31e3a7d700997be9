"""Evaluation per address family (aiaudit.linux.netfilter.evaluate): the default, admitted
and restricted ports, and the cases the firewall checks judge."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.core.model import Aspect
from aiaudit.linux.netfilter import nft
from aiaudit.linux.netfilter.evaluate import cases, evaluate, ipv6_off
from tests.linux.netfilter.hosts import SSH_ONLY, FakeCommands, nft_root

SOURCES = SSH_ONLY.replace("tcp dport 22 accept", "tcp dport 22 accept\n"
                           "    ip saddr 10.0.0.0/8 tcp dport 9100 accept\n"
                           "    tcp dport 8888 drop")


def test_admitted_restricted_and_default() -> None:
    rs = nft.parse_text(SOURCES, "/etc/nftables.conf")
    ev = evaluate(rs, 4, [("udp", 53, 53)])
    assert [(p, lo, hi) for p, lo, hi, _d in ev.admitted] == [("tcp", 22, 22)]
    assert [(p, lo, hi) for p, lo, hi, _d in ev.restricted] == [("tcp", 9100, 9100)]
    assert ev.open_default() == [] and [c.describe() for c in ev.chains] == [
        "inet filter input"]
    # IPv6: "ip saddr" never matches, 9100 is not reachable at all
    assert evaluate(rs, 6, []).restricted == ()
    accepting = nft.parse_text(SOURCES.replace("policy drop", "policy accept"), "x")
    assert evaluate(accepting, 4, []).open_default() == ["tcp", "udp"]


def test_cases_offline_boot_only(make_root) -> None:
    host = Host(str(nft_root(make_root, SSH_ONLY)))
    got = list(cases(host, True, []))
    assert [(c.subject, c.aspect) for c in got] == [("ipv4 (boot)", Aspect.PERSISTED),
                                                    ("ipv6 (boot)", Aspect.PERSISTED)]
    assert all(c.evaluation is not None and c.skip is c.error is None for c in got)
    v4, v6 = cases(host, False, [])
    assert v4.evaluation is not None and v6.skip == "not judged (ipv6: false)"


def test_cases_live_running_first_ipv6_off_problems_are_errors(make_root) -> None:
    root = nft_root(make_root, SSH_ONLY, extra={
        "/proc/net/if_inet6": "", "/proc/sys/net/ipv6/conf/all/disable_ipv6": "1\n",
        "/proc/sys/net/ipv6/conf/default/disable_ipv6": "1\n"})
    host = FakeCommands(root, {"nft -j list ruleset": (2, "", "boom")})
    assert ipv6_off(host) == "IPv6 is disabled (net.ipv6.conf.all/default.disable_ipv6 = 1)"
    got = {c.subject: c for c in cases(host, True, [])}
    assert list(got) == ["ipv4 (running)", "ipv6 (running)", "ipv4 (boot)", "ipv6 (boot)"]
    assert got["ipv4 (running)"].error == \
        "cannot determine the running firewall: nft -j list ruleset: boom"
    assert got["ipv6 (running)"].skip == got["ipv6 (boot)"].skip == ipv6_off(host)
    assert got["ipv4 (boot)"].evaluation is not None
    assert ipv6_off(Host(str(root))) is None  # offline: judged
