"""firewall.allowed_ports: ports admitted beyond the allowed ones, with the rule that admits
them, for every mechanism; restricted sources; DNAT noted; iptables-nft tables read from
iptables-save."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.helpers import FIXTURES
from tests.linux.netfilter.hosts import (
    NFT,
    SSH_ONLY,
    FakeCommands,
    firewalld_root,
    nft_root,
    results,
    run_fake,
    ufw_root,
)


def test_extra_port_fails_allowed_ports_with_line(make_root) -> None:
    conf = SSH_ONLY.replace("tcp dport 22 accept", "tcp dport { 22, 8888 } accept\n"
                            "    udp dport 60000-61000 accept")
    root = nft_root(make_root, conf)
    ap = results("firewall.allowed_ports", root)
    r = ap["ipv4 (boot)"]
    assert r.status is Status.FAIL and r.data["admitted"] == ["8888/tcp", "60000-61000/udp"]
    assert any(e.source == "etc/nftables.conf:8" for e in r.evidence)
    ok = results("firewall.allowed_ports", root,
                 {"allowed": ["22/tcp", "8888/tcp", "60000-61000/udp"]})
    assert all(x.status is Status.PASS for x in ok.values())
    assert results("firewall.default_deny", root)["ipv4 (boot)"].status is Status.PASS


def test_include_relative_and_glob(make_root) -> None:
    conf = 'flush ruleset\ninclude "nftables.d/*.nft"\n'
    root = nft_root(make_root, conf, extra={"/etc/nftables.d/10-input.nft": SSH_ONLY.replace(
        "flush ruleset\n", "").replace("tcp dport 22", "tcp dport 2222")})
    ap = results("firewall.allowed_ports", root)
    r = ap["ipv4 (boot)"]
    assert r.status is Status.FAIL and r.data["admitted"] == ["2222/tcp"]
    assert any(e.source == "etc/nftables.d/10-input.nft:7" for e in r.evidence)


def test_ufw_enabled_and_unit_enabled(make_root) -> None:
    root = ufw_root(make_root)
    dd = results("firewall.default_deny", root)
    assert all(r.status is Status.PASS for r in dd.values())
    assert "decided by ufw" in dd["ipv4 (boot)"].message
    assert any(e.source == "etc/default/ufw:2" for e in dd["ipv4 (boot)"].evidence)
    ap = results("firewall.allowed_ports", root)
    r = ap["ipv6 (boot)"]
    assert r.status is Status.FAIL and "8888/tcp" in r.message
    assert any(e.source == "etc/ufw/user6.rules:7" for e in r.evidence)
    assert "ufw delete allow 8888/tcp" in r.remediation.snippets[0].content


def test_firewalld_vendor_public(make_root) -> None:
    root = firewalld_root(make_root)
    assert all(r.status is Status.PASS
               for r in results("firewall.default_deny", root).values())
    ap = results("firewall.allowed_ports", root)
    assert all(r.status is Status.PASS for r in ap.values()), ap


def test_firewalld_etc_zone_overrides_vendor(make_root) -> None:
    zone = ('<?xml version="1.0" encoding="utf-8"?>\n<zone>\n  <short>Public</short>\n'
            '  <service name="ssh"/>\n  <service name="prometheus-node-exporter"/>\n'
            '  <port port="8888" protocol="tcp"/>\n</zone>\n')
    root = firewalld_root(make_root, zone)
    r = results("firewall.allowed_ports", root)["ipv4 (boot)"]
    assert r.status is Status.FAIL and r.data["admitted"] == ["8888/tcp", "9100/tcp"]
    srcs = [e.source for e in r.evidence]
    assert "etc/firewalld/zones/public.xml:6" in srcs and \
        "etc/firewalld/zones/public.xml:5" in srcs
    assert "firewall-cmd --permanent --remove-port=8888/tcp" in \
        r.remediation.snippets[0].content


def test_iptables_nft_xt_tables_read_from_iptables_save(make_root) -> None:
    ipt_dir = FIXTURES / "iptables"
    root = make_root({"/proc/net/if_inet6": ""})
    host = FakeCommands(root, {
        "nft -j list ruleset": (0, (ipt_dir / "rules.v4.nft.json").read_text(), ""),
        "iptables -V": (0, "iptables v1.8.9 (nf_tables)\n", ""),
        "iptables-save": (0, (ipt_dir / "rules.v4.saved").read_text(), ""),
    })
    got = run_fake(host, "firewall.allowed_ports",
                   {"allowed": ["22/tcp", "80/tcp", "443/tcp", "60000-61000/udp"]})
    r = got["ipv4 (running)"]
    assert r.status is Status.PASS, r.message  # no "maybe" from the xt conntrack match
    assert "iptables-save" in host.calls
    assert "iptables-legacy-save" not in host.calls  # no legacy table registered
    # without iptables-save the xt matches stay unknown: not provably admitted-only
    host2 = FakeCommands(root, {
        "nft -j list ruleset": (0, (ipt_dir / "rules.v4.nft.json").read_text(), "")})
    r2 = run_fake(host2, "firewall.allowed_ports",
                  {"allowed": ["22/tcp", "60000-61000/udp"]})["ipv4 (running)"]
    assert r2.status is Status.FAIL and "maybe" in r2.message


def test_source_restricted_ports_listed_not_failed(make_root) -> None:
    conf = SSH_ONLY.replace("tcp dport 22 accept", "tcp dport 22 accept\n"
                            "    ip saddr 10.0.0.0/8 tcp dport 9100 accept\n"
                            '    iifname "eth1" udp dport 5353 accept')
    root = nft_root(make_root, conf)
    r = results("firewall.allowed_ports", root)["ipv4 (boot)"]
    assert r.status is Status.PASS
    assert "Admitted only from named sources or interfaces" in r.message
    assert "9100/tcp by 'ip saddr 10.0.0.0/8 tcp dport 9100 accept' in inet filter input " \
           "(etc/nftables.conf:9)" in r.message and "5353/udp" in r.message
    strict = results("firewall.allowed_ports", root, {"include_restricted": True})
    assert strict["ipv4 (boot)"].status is Status.FAIL
    assert strict["ipv4 (boot)"].data["admitted"] == ["9100/tcp", "5353/udp"]
    # IPv6: "ip saddr" never matches, so 9100 is not admitted at all there
    assert "9100/tcp" not in strict["ipv6 (boot)"].message


def test_dnat_bypass_is_noted(make_root) -> None:
    root = nft_root(make_root, (NFT / "docker_like.nft").read_text())
    r = results("firewall.allowed_ports", root)["ipv4 (boot)"]
    assert r.status is Status.PASS  # 8888 is not admitted on the input hook ...
    assert "DNAT/REDIRECT rules forward connections" in r.message  # ... but forwarded
    assert "dport 8888" in r.message and "etc/nftables.conf:21" in r.message


def test_allowed_specs_add_the_declared_ports_once() -> None:
    from aiaudit.checks.firewall.allowed_ports import allowed_specs

    assert allowed_specs(["22/tcp"], [("tcp", 22, 22), ("tcp", 6817, 6818),
                                      ("udp", 5000, 5000)]) == \
        ["22/tcp", "6817-6818/tcp", "5000/udp"]
    assert allowed_specs([], []) == []
