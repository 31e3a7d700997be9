"""firewalld permanent configuration: ``firewalld.conf`` (``KEY=value``), zone and service
XML (firewalld.zone(5), firewalld.service(5)), into the :mod:`aiaudit.linux.netfilter.model`
model.

A zone's ``target`` decides packets no element of the zone matched: ``default`` and
``%%REJECT%%`` reject (ICMP aside), ``DROP`` drops, ``ACCEPT`` accepts.  Elements that open
ports: ``<service name>`` (ports of the service definition), ``<port port protocol>``;
``<rule>`` (rich rules) are not modelled and count as unknown.
"""

from __future__ import annotations

from dataclasses import field

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record
from aiaudit.linux.netfilter.iptables import port_ranges
from aiaudit.linux.netfilter.model import Chain, Cond, Rule, Ruleset


@record
class Element:
    """An XML element of interest with its attributes and line."""

    tag: str
    attrs: dict[str, str]
    line: int


@record(frozen=False)
class Zone:
    """A zone definition."""

    name: str
    source: str
    target: str = "default"
    target_line: int = 1
    services: list[Element] = field(default_factory=list)
    ports: list[Element] = field(default_factory=list)
    rules: list[Element] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


def _elements(text: str, source: str) -> list[Element]:
    out: list[Element] = []
    depth = [0]
    from xml.parsers import expat  # only when a zone file is parsed

    p = expat.ParserCreate()

    def start(tag: str, attrs: dict[str, str]) -> None:
        out.append(Element(tag, dict(attrs), p.CurrentLineNumber))
        depth[0] += 1

    def end(tag: str) -> None:
        depth[0] -= 1

    def no_entities(*_args: object) -> None:
        raise ParseError("XML entity declarations are not allowed", source=source)

    p.StartElementHandler = start
    p.EndElementHandler = end
    p.EntityDeclHandler = no_entities
    try:
        p.Parse(text.encode("utf-8", errors="replace"), True)
    except expat.ExpatError as exc:
        raise ParseError(f"invalid XML: {exc}", line=exc.lineno, source=source) from None
    except LookupError as exc:
        # an encoding Python does not know in the XML declaration (encoding="utf-99"):
        # expat asks Python's codecs, whose LookupError comes through; firewalld's own
        # reader (xml.sax over expat) fails on the file the same way
        raise ParseError(f"invalid XML: the XML declaration names an unknown encoding "
                         f"({exc})", line=1, source=source) from None
    except (UnicodeError, ValueError) as exc:  # a codec that cannot decode the bytes
        raise ParseError(f"invalid XML: cannot decode it ({type(exc).__name__}: {exc})",
                         line=p.CurrentLineNumber or 1, source=source) from None
    return out


def parse_zone(text: str, name: str, source: str) -> Zone:
    """A zone XML file."""
    els = _elements(text, source)
    if not els or els[0].tag != "zone":
        raise ParseError("root element is not <zone>", source=source)
    z = Zone(name, source, els[0].attrs.get("target", "default"), els[0].line)
    nested = 0
    for e in els[1:]:
        if e.tag == "rule":
            z.rules.append(e)
            nested = 1
        elif e.tag == "service" and "name" in e.attrs:
            if not nested:
                z.services.append(e)
        elif e.tag == "port" and "port" in e.attrs:
            if not nested:
                z.ports.append(e)
        elif e.tag == "interface" and "name" in e.attrs:
            z.interfaces.append(e.attrs["name"])
        elif e.tag == "source" and not nested:
            z.sources.append(e.attrs.get("address") or e.attrs.get("ipset", "")
                             or e.attrs.get("mac", ""))
    return z


@record
class Service:
    """A service definition: ports and an optional destination restriction."""

    ports: tuple[tuple[str, str], ...]
    """(protocol, port) pairs; ``port`` may be a range ``a-b``."""
    destinations: dict[str, str] = field(default_factory=dict)
    """``<destination ipv4=... ipv6=...>``: the service applies only to these addresses
    (and only to the families named)."""


def parse_service(text: str, source: str) -> Service:
    """A service XML file."""
    els = _elements(text, source)
    if not els or els[0].tag != "service":
        raise ParseError("root element is not <service>", source=source)
    dest: dict[str, str] = {}
    for e in els[1:]:
        if e.tag == "destination":
            dest.update({k: v for k, v in e.attrs.items() if k in ("ipv4", "ipv6")})
    return Service(tuple((e.attrs.get("protocol", "tcp"), e.attrs["port"]) for e in els[1:]
                         if e.tag == "port" and "port" in e.attrs), dest)


def to_ruleset(zone: Zone, services: dict[str, tuple[str, Service] | None]) -> Ruleset:
    """The input chain of ``zone``: established and loopback accepted, then its services
    and ports, rich rules (unknown), then the target.  ``services`` maps a service name to
    (definition file, ports), ``None`` for a service with no definition found."""
    rs = Ruleset()
    chain = rs.add(Chain("inet", "firewalld", f"filter_IN_{zone.name}", hook="input",
                         prio=10, policy="accept", source=zone.source, line=zone.target_line,
                         policy_line=zone.target_line, origin="firewalld"))
    chain.rules.append(Rule((Cond("ct", ("established", "related")),), "accept", None,
                            None, None, "ct state established,related accept (built-in)"))
    chain.rules.append(Rule((Cond("iif", ("lo",)),), "accept", None, None, None,
                            'iifname "lo" accept (built-in)'))
    for e in zone.services:
        sname = e.attrs["name"]
        svc = services.get(sname)
        text = f'<service name="{sname}"/>'
        if svc is None:
            chain.rules.append(Rule((Cond("unknown", text=text),), "accept", None,
                                    zone.source, e.line, text + " (definition not found)"))
            continue
        dest = svc[1].destinations
        extra: tuple[Cond, ...] = ()
        if dest:
            fams = tuple(f"ipv{k[-1]}" for k in dest)
            extra = (Cond("family", fams, text=text), Cond("daddr", tuple(dest.values()),
                                                           text=text))
        for proto, port in svc[1].ports:
            protos = (proto,) if proto in ("tcp", "udp", "sctp", "dccp") else ()
            chain.rules.append(Rule((Cond("dport", protos, False, port_ranges(
                port.replace("-", ":")), text), *extra), "accept", None, zone.source,
                e.line, f"{text} -> {port}/{proto} ({svc[0]})"))
    for e in zone.ports:
        proto, port = e.attrs.get("protocol", "tcp"), e.attrs["port"]
        text = f'<port port="{port}" protocol="{proto}"/>'
        chain.rules.append(Rule((Cond("dport", (proto,), False,
                                      port_ranges(port.replace("-", ":")), text),),
                                "accept", None, zone.source, e.line, text))
    for e in zone.rules:
        chain.rules.append(Rule((Cond("unknown", text="<rule>"),), "maybe", None,
                                zone.source, e.line, "<rule> (rich rule, not modelled)"))
    target = zone.target.upper()
    verdict = "accept" if target == "ACCEPT" else "drop" if target == "DROP" else "reject"
    chain.rules.append(Rule((), verdict, None, zone.source, zone.target_line,
                            f'zone target "{zone.target}"'))
    return rs
