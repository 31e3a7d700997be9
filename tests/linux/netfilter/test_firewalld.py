"""firewalld zone and service XML (vendor files from Debian's firewalld 1.3.3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.netfilter import firewalld as fwd
from aiaudit.linux.netfilter import model as nf
from tests.helpers import FIXTURES

FW = FIXTURES / "firewalld"


def zone(name: str) -> fwd.Zone:
    return fwd.parse_zone((FW / f"{name}.xml").read_text(), name, f"/usr/lib/{name}.xml")


def services() -> dict[str, tuple[str, fwd.Service] | None]:
    out: dict[str, tuple[str, fwd.Service] | None] = {}
    for n in ("ssh", "dhcpv6-client", "http", "https", "prometheus-node-exporter"):
        out[n] = (f"/usr/lib/firewalld/services/{n}.xml",
                  fwd.parse_service((FW / f"{n}.xml").read_text(), n))
    return out


def test_vendor_zones() -> None:
    pub = zone("public")
    assert pub.target == "default" and [e.attrs["name"] for e in pub.services] == \
        ["ssh", "dhcpv6-client"]
    assert pub.services[0].line == 5
    assert zone("drop").target == "DROP" and zone("trusted").target == "ACCEPT"


def test_service_ports_and_destination() -> None:
    s = fwd.parse_service((FW / "dhcpv6-client.xml").read_text(), "x")
    assert s.ports == (("udp", "546"),) and s.destinations == {"ipv6": "fe80::/64"}


@pytest.mark.parametrize(("name", "fam", "proto", "port", "want"), [
    ("public", 4, "tcp", 22, "accept"), ("public", 6, "tcp", 22, "accept"),
    ("public", 4, "tcp", 8888, "drop"), ("public", 4, "udp", 546, "drop"),
    ("public", 6, "udp", 546, "drop"),  # link-local destination only
    ("drop", 4, "tcp", 22, "drop"), ("trusted", 4, "tcp", 8888, "accept"),
])
def test_zone_decisions(name: str, fam: int, proto: str, port: int, want: str) -> None:
    rs = fwd.to_ruleset(zone(name), services())
    assert str(nf.decide(rs, nf.Probe(fam, proto, port)).outcome) == want


def test_ports_rules_and_missing_service() -> None:
    z = fwd.parse_zone('<?xml version="1.0"?>\n<zone>\n<service name="nosuch"/>\n'
                       '<port port="8000-8010" protocol="tcp"/>\n<rule family="ipv4">'
                       '<source address="10.0.0.0/8"/><port port="9" protocol="tcp"/>'
                       '<accept/></rule>\n<interface name="eth0"/>\n</zone>\n', "z", "/z")
    assert z.ports[0].line == 4 and z.interfaces == ["eth0"] and len(z.rules) == 1
    rs = fwd.to_ruleset(z, {"nosuch": None})
    assert nf.decide(rs, nf.Probe(4, "tcp", 8005)).outcome is nf.Outcome.ACCEPT
    assert nf.decide(rs, nf.Probe(4, "tcp", 1)).outcome is nf.Outcome.MAYBE


@pytest.mark.parametrize("bad", ["", "<zone>", "<service/>",
                                 '<!DOCTYPE z [<!ENTITY a "x">]><zone/>'])
def test_invalid(bad: str) -> None:
    with pytest.raises(ParseError):
        fwd.parse_zone(bad, "z", "/z")


@given(st.text())
def test_any_text(text: str) -> None:
    for fn in (lambda t: fwd.parse_zone(t, "z", "/z"), lambda t: fwd.parse_service(t, "/s")):
        try:
            fn(text)
            fn(f"<zone>{text}</zone>")
        except ParseError:
            pass


@pytest.mark.parametrize(("encoding", "words"), [
    ("utf-99", "the XML declaration names an unknown encoding (unknown encoding: utf-99)"),
    ("rot13", "unknown encoding"), ("base64", "unknown encoding"),
    ("utf-32", "cannot decode it"), ("idna", "cannot decode it"),
    ("undefined", "cannot decode it")])
def test_an_unknown_declared_encoding_is_a_parse_error(encoding: str, words: str) -> None:
    """expat asks Python's codecs for the declared encoding; its LookupError (and a codec's
    own error) escaped as an internal error of the check (issue 25)."""
    text = f'<?xml version="1.0" encoding="{encoding}"?>\n<zone target="ACCEPT"/>\n'
    for parse in (lambda: fwd.parse_zone(text, "public", "/etc/firewalld/zones/public.xml"),
                  lambda: fwd.parse_service(text.replace("zone", "service"), "/s.xml")):
        with pytest.raises(ParseError, match=r":1: invalid XML: ") as info:
            parse()
        assert words in str(info.value)


def test_a_zone_in_an_unknown_encoding_costs_only_the_firewall_rules(make_root) -> None:
    """End to end: the firewall checks give an error result naming the zone file and its
    line, nothing else is affected."""
    from aiaudit.core.model import Status
    from tests.linux.netfilter.hosts import firewalld_root, results

    root = firewalld_root(make_root, etc_zone='<?xml version="1.0" encoding="utf-99"?>\n'
                                              '<zone target="ACCEPT"/>\n')
    for check in ("firewall.default_deny", "firewall.allowed_ports"):
        for r in results(check, root).values():
            assert r.status is Status.ERROR, r
            assert "/etc/firewalld/zones/public.xml:1: invalid XML: the XML declaration " \
                   "names an unknown encoding" in r.message
            assert "internal error" not in r.message
