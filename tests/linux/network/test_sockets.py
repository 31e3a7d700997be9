"""Listening sockets (aiaudit.linux.network.sockets) and whether the running firewall drops
connections to them (aiaudit.linux.network.reach)."""

from __future__ import annotations

from aiaudit.core.model import Status
from aiaudit.linux.network import reach, sockets
from aiaudit.linux.network.procnet import parse
from tests.linux.netfilter.hosts import FakeCommands
from tests.linux.network.hosts import proc
from tests.linux.network.test_procnet import row


def test_exposed_drops_loopback_connected_and_duplicates() -> None:
    tcp = parse(row("0.0.0.0", 22, 0x0A, 1) + row("0.0.0.0", 22, 0x0A, 2) +
                row("127.0.0.1", 631, 0x0A, 3) + row("10.0.0.5", 40000, 0x01, 4), "tcp", 4)
    udp = parse(row("0.0.0.0", 53, 0x07, 5), "udp", 4)
    socks = sockets.Sockets(tuple(tcp + udp), {}, ())
    assert [(s.proto, s.port, s.inode) for s in sockets.exposed(socks)] == [
        ("tcp", 22, 1), ("udp", 53, 5)]
    assert [s.port for s in sockets.exposed(socks, udp=False)] == [22]


def test_start_offline_skips_and_unreadable_tables_are_errors(make_root) -> None:
    from aiaudit.core.host import Host

    socks, first = sockets.start(Host(str(make_root({"/etc/hostname": "x\n"}))), "what")
    assert socks is None and [r.status for r in first] == [Status.SKIP]
    files, _links = proc(tcp=row("0.0.0.0", 22, 0x0A, 1))
    files["/proc/net/udp"] = "garbage\n"
    del files["/proc/net/udp6"]  # IPv6 off: not a problem
    socks, first = sockets.start(Host(str(make_root(files)), live=True), "what")
    assert socks is not None and [s.port for s in socks.sockets] == [22]
    assert [(r.status, r.subject) for r in first] == [(Status.ERROR, "/proc/net/udp")]


def test_families_of_a_wildcard_ipv6_socket_follow_bindv6only(make_root) -> None:
    from aiaudit.core.host import Host

    (any6,) = parse(row("::", 22, 0x0A, 1), "tcp", 6)
    (one6,) = parse(row("fd00::1", 22, 0x0A, 2), "tcp", 6)
    (any4,) = parse(row("0.0.0.0", 22, 0x0A, 3), "tcp", 4)
    both = Host(str(make_root({"/proc/sys/net/ipv6/bindv6only": "0\n"})), live=True)
    v6only = Host(str(make_root({"/proc/sys/net/ipv6/bindv6only": "1\n"})), live=True)
    assert reach.families(both, any6) == (4, 6)
    assert reach.families(v6only, any6) == (6,)
    assert reach.families(both, one6) == (6,) and reach.families(both, any4) == (4,)


def test_firewall_note_needs_every_family_dropped(make_root) -> None:
    import json

    # the running ruleset: an IPv4-only table, policy drop, 22/tcp accepted
    rs_json = json.dumps({"nftables": [
        {"chain": {"family": "ip", "table": "f", "name": "input", "hook": "input",
                   "prio": 0, "policy": "drop"}},
        {"rule": {"family": "ip", "table": "f", "chain": "input", "expr": [
            {"match": {"op": "==", "left": {"payload": {"protocol": "tcp",
                                                        "field": "dport"}},
                       "right": 22}}, {"accept": None}]}}]})
    root = make_root({"/proc/sys/net/ipv6/bindv6only": "0\n"})
    (s8888,) = parse(row("0.0.0.0", 8888, 0x0A, 1), "tcp", 4)
    (s22,) = parse(row("0.0.0.0", 22, 0x0A, 2), "tcp", 4)
    (any6,) = parse(row("::", 8888, 0x0A, 3), "tcp", 6)
    host = FakeCommands(root, {"nft -j list ruleset": (0, rs_json, "")})
    assert reach.firewall_note(host, s8888) == (
        True, " but the running firewall drops new connections to it")
    assert reach.firewall_note(host, s22) == (False, "")
    # the table does not filter IPv6: a :: socket is reachable over IPv6
    assert reach.firewall_note(host, any6) == (False, "")
