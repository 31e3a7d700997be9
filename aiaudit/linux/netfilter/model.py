"""A small model of netfilter input filtering, shared by the nftables, iptables, ufw and
firewalld parsers, and the evaluator that decides what happens to a new connection.

How netfilter decides (nftables wiki "Configuring chains", "Netfilter hooks"; nft(8)):
every base chain registered on the ``input`` hook of a family that covers the packet
(``inet`` both, ``ip`` IPv4, ``ip6`` IPv6; iptables' ``filter INPUT`` is such a chain at
priority 0) sees the packet, in ascending priority.  ``accept`` ends only the current base
chain, the next one still sees the packet; ``drop``/``reject`` are final.  A base chain
without a ``policy`` accepts.  ``jump`` returns to the caller, ``goto`` does not; ``return``
in a base chain applies its policy.

The evaluator sends a *probe*: a new connection (conntrack state ``new``) to one TCP or UDP
port, from an untrusted source address arriving on an untrusted interface (not ``lo``,
not an interface or source a rule names).  Each rule condition is true, false or unknown
for the probe; an unknown condition (an expression this model does not understand, a
rate limit) makes the outcome ``maybe``.
"""

from __future__ import annotations

import enum
from dataclasses import field
from typing import Callable

from aiaudit.core.startup.records import record

YES, NO, MAYBE = 1, 0, 2

MAX_DEPTH = 16
"""Jump depth bound (the kernel allows 16 levels of jumps in nftables too)."""


class Outcome(str, enum.Enum):
    """What the input path does with a probe."""

    ACCEPT = "accept"
    DROP = "drop"
    MAYBE = "maybe"

    def __str__(self) -> str:
        return self.value


@record
class Cond:
    """One match of a rule.

    ``kind``: ``iif`` (interface names), ``ct`` (conntrack states), ``proto`` (layer-4
    protocol names), ``dport`` (``ports`` for ``proto`` values, ``None`` ports = a set not
    resolved), ``family`` (``ipv4``/``ipv6``), ``saddr``/``daddr`` (address strings),
    ``false`` (never true for a TCP/UDP probe), ``unknown``.
    """

    kind: str
    values: tuple[str, ...] = ()
    negate: bool = False
    ports: tuple[tuple[int, int], ...] | None = None
    text: str = ""


@record
class Rule:
    """A rule: conditions (all must hold) and a verdict."""

    conds: tuple[Cond, ...]
    verdict: str | None
    """``accept``, ``drop``, ``reject``, ``return``, ``jump``, ``goto``, ``maybe`` (a
    verdict we cannot model, e.g. ``queue``) or ``None`` (no verdict: counter, log)."""
    target: str | None = None
    """Chain name for ``jump``/``goto``."""
    source: str | None = None
    """File (host path) or command the rule came from."""
    line: int | None = None
    text: str = ""


@record(frozen=False)
class Chain:
    """A chain; base chains have a ``hook``."""

    family: str
    table: str
    name: str
    hook: str | None = None
    prio: int = 0
    policy: str = "accept"
    rules: list[Rule] = field(default_factory=list)
    source: str | None = None
    line: int | None = None
    policy_line: int | None = None
    """Line of the ``policy`` statement (or the chain line)."""
    origin: str = "nftables"
    """Mechanism that owns the chain: nftables, iptables, ufw, firewalld."""

    def describe(self) -> str:
        """``inet filter input`` style name (``[iptables-legacy]`` etc. when not nft's)."""
        tag = f" [{self.origin}]" if self.origin not in ("nftables", "iptables") else ""
        return f"{self.family} {self.table} {self.name}{tag}"


@record(frozen=False)
class Ruleset:
    """All chains, keyed by (family, table, name)."""

    chains: dict[tuple[str, str, str], Chain] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    xt_tables: set[tuple[str, str]] = field(default_factory=set)
    """(family, table) of iptables-nft tables with ``xt`` expressions nft cannot show."""
    dnat: list[str] = field(default_factory=list)
    """DNAT/REDIRECT rules (display form): connections they forward to containers or VMs
    never reach the input hook, so input filtering does not cover them."""

    def add(self, chain: Chain) -> Chain:
        """Add ``chain`` or return the existing one of the same key (rules then append)."""
        key = (chain.family, chain.table, chain.name)
        have = self.chains.get(key)
        if have is None:
            self.chains[key] = chain
            return chain
        if chain.hook is not None:
            have.hook, have.prio = chain.hook, chain.prio
            have.policy, have.policy_line = chain.policy, chain.policy_line
        return have

    def merge(self, other: Ruleset) -> None:
        """Add the chains of ``other`` (several mechanisms loaded into one kernel)."""
        for key, chain in other.chains.items():
            if key in self.chains:
                key = (key[0], f"{key[1]}#{chain.origin}", key[2])
                chain.table = key[1]
            self.chains[key] = chain
        self.notes.extend(other.notes)
        self.dnat.extend(other.dnat)
        self.xt_tables |= other.xt_tables

    def input_chains(self, family: int) -> list[Chain]:
        """Base chains on the input hook that see IPv``family`` packets, by priority."""
        fams = ("inet", "ip") if family == 4 else ("inet", "ip6")
        out = [c for c in self.chains.values() if c.hook == "input" and c.family in fams]
        return sorted(out, key=lambda c: c.prio)

    def ports_mentioned(self) -> set[tuple[str, int, int]]:
        """Every (proto, lo, hi) port range any rule matches on."""
        out: set[tuple[str, int, int]] = set()
        for chain in self.chains.values():
            for rule in chain.rules:
                for c in rule.conds:
                    if c.kind == "dport" and c.ports:
                        for proto in c.values or ("tcp", "udp"):
                            for lo, hi in c.ports:
                                out.add((proto, lo, hi))
        return out


@record
class Probe:
    """A new connection from an untrusted source on an untrusted interface, or with
    ``restricted`` from a source address and interface that rules name (a trusted subnet,
    an internal NIC): the ports only such probes reach are open to a restricted set."""

    family: int
    proto: str
    port: int
    restricted: bool = False


@record
class Decision:
    """Outcome of a probe and the rules or policies that produced it."""

    outcome: Outcome
    deciders: tuple[tuple[Chain, Rule | None], ...]
    """(chain, rule) pairs; rule ``None`` = the chain's policy."""
    chains: tuple[Chain, ...] = ()
    """Base chains that saw the probe."""


_PROTO_NUM = {"6": "tcp", "17": "udp", "1": "icmp", "58": "ipv6-icmp", "132": "sctp",
              "icmpv6": "ipv6-icmp", "all": "any"}


def norm_proto(name: str) -> str:
    """Canonical layer-4 protocol name (``6`` -> ``tcp``)."""
    name = name.lower().strip('"')
    return _PROTO_NUM.get(name, name)


def _is_loopback(addr: str) -> bool:
    import ipaddress

    try:
        net = ipaddress.ip_network(addr.strip('"'), strict=False)
    except ValueError:
        return False
    return net.is_loopback


def _link_local(addr: str) -> bool:
    """Link-local or multicast only: not reachable from a routed network."""
    import ipaddress

    try:
        net = ipaddress.ip_network(addr.strip('"'), strict=False)
    except ValueError:
        return False
    return net.is_link_local or net.is_multicast


def _everything(addr: str) -> bool:
    return addr in ("0.0.0.0/0", "::/0", "any")


def _match_iif(cond: Cond, probe: Probe) -> int:
    # The probe comes in on an interface no rule names: "== X" is false for any X,
    # "!= X" true.  A restricted probe comes in on the named (non-loopback) one.
    named = [v for v in cond.values if v.strip('"') != "lo"]
    return YES if probe.restricted and named else NO


def _match_ct(cond: Cond, probe: Probe) -> int:
    return YES if "new" in cond.values else NO


def _match_proto(cond: Cond, probe: Probe) -> int:
    vals = {norm_proto(v) for v in cond.values}
    return YES if probe.proto in vals or "any" in vals else NO


def _match_family(cond: Cond, probe: Probe) -> int:
    return YES if f"ipv{probe.family}" in cond.values else NO


def _match_addr(cond: Cond, probe: Probe) -> int:
    if any(_everything(v) for v in cond.values):
        return YES
    if cond.kind == "daddr" and not all(_is_loopback(v) or _link_local(v)
                                        for v in cond.values):
        return YES  # a packet for one of this host's addresses
    if cond.kind == "saddr" and probe.restricted and \
            not all(_is_loopback(v) for v in cond.values):
        return YES  # the restricted probe comes from the named sources
    return NO  # an untrusted source is not in a named set of sources


_MATCHERS: dict[str, Callable[[Cond, Probe], int]] = {
    "false": lambda _cond, _probe: NO, "iif": _match_iif, "ct": _match_ct,
    "proto": _match_proto, "family": _match_family, "saddr": _match_addr,
    "daddr": _match_addr,
}
"""YES or NO for a condition of this kind, before its negation."""


def _match_dport(cond: Cond, probe: Probe) -> int:
    if cond.values and probe.proto not in cond.values:
        return NO  # "tcp dport" implies tcp, even negated
    if cond.ports is None:
        return MAYBE
    r = YES if any(lo <= probe.port <= hi for lo, hi in cond.ports) else NO
    return _negated(r) if cond.negate else r


def _negated(r: int) -> int:
    return YES if r == NO else NO


def match(cond: Cond, probe: Probe) -> int:
    """YES, NO or MAYBE: does ``cond`` hold for ``probe``?  An ``unknown`` condition, or a
    kind this model does not know, is MAYBE."""
    if cond.kind == "dport":
        return _match_dport(cond, probe)
    judge = _MATCHERS.get(cond.kind)
    if judge is None:
        return MAYBE
    r = judge(cond, probe)
    return _negated(r) if cond.negate else r


def rule_match(rule: Rule, probe: Probe) -> int:
    """Conjunction of the rule's conditions."""
    out = YES
    for c in rule.conds:
        m = match(c, probe)
        if m == NO:
            return NO
        if m == MAYBE:
            out = MAYBE
    return out


# A path outcome: ("accept"|"drop"|"maybe"|"return", chain, rule)
_Path = tuple[str, Chain, "Rule | None"]


def _walk(rs: Ruleset, chain: Chain, probe: Probe, depth: int) -> list[_Path]:
    """Possible outcomes of ``chain`` for ``probe``; ``return`` = fell off / returned."""
    out: list[_Path] = []
    if depth > MAX_DEPTH:
        return [("maybe", chain, None)]
    for rule in chain.rules:
        m = rule_match(rule, probe)
        if m == NO or rule.verdict is None:
            continue
        v = rule.verdict
        if v in ("jump", "goto"):
            target = rs.chains.get((chain.family, chain.table, rule.target or ""))
            if target is None:
                sub: list[_Path] = [("maybe", chain, rule)]
            else:
                sub = _walk(rs, target, probe, depth + 1)
            ends = [p for p in sub if p[0] != "return"]
            goes_on = len(ends) < len(sub)
            if v == "goto" and goes_on:
                ends.append(("return", chain, rule))
                goes_on = False
            out.extend(ends)
            if m == YES and not goes_on:
                return out
            continue
        verdict = {"reject": "drop"}.get(v, v)
        out.append((verdict, chain, rule))
        if m == YES:
            return out
    out.append(("return", chain, None))
    return out


def decide(rs: Ruleset, probe: Probe) -> Decision:
    """What the input hook does with ``probe``: every base chain must accept."""
    chains = rs.input_chains(probe.family)
    deciders: list[tuple[Chain, Rule | None]] = []
    maybe = False
    for chain in chains:
        paths = _walk(rs, chain, probe, 0)
        final: list[_Path] = []
        for verdict, c, rule in paths:
            if verdict == "return":
                verdict = "drop" if chain.policy == "drop" else "accept"
                final.append((verdict, chain, None))
            else:
                final.append((verdict, c, rule))
        kinds = {f[0] for f in final}
        if kinds == {"drop"}:
            return Decision(Outcome.DROP, tuple((c, r) for _v, c, r in final), tuple(chains))
        if kinds != {"accept"}:
            maybe = True
        deciders.extend((c, r) for _v, c, r in final)
    return Decision(Outcome.MAYBE if maybe else Outcome.ACCEPT, tuple(deciders), tuple(chains))


def sentinel_port(rs: Ruleset, proto: str, avoid: set[int] | frozenset[int] = frozenset()
                  ) -> int:
    """A port no rule names: it stands for "every other port"."""
    ranges = [(lo, hi) for p, lo, hi in rs.ports_mentioned() if p == proto]
    for port in (40961, 50999, 61203, 33333, 47808, 1, 65535):
        if port not in avoid and not any(lo <= port <= hi for lo, hi in ranges):
            return port
    for port in range(1, 65536):
        if port not in avoid and not any(lo <= port <= hi for lo, hi in ranges):
            return port
    return 0


PORT_SPEC_PATTERN = r"^[0-9]{1,5}(-[0-9]{1,5})?/(tcp|udp)$"
"""JSON Schema pattern of an allowed-port entry: ``22/tcp``, ``60000-61000/udp``."""


def parse_port_specs(specs: list[str] | tuple[str, ...]) -> list[tuple[str, int, int]]:
    """``["22/tcp", "60000-61000/udp"]`` -> ``[("tcp", 22, 22), ("udp", 60000, 61000)]``."""
    out = []
    for s in specs:
        ports, _, proto = s.partition("/")
        lo, _, hi = ports.partition("-")
        out.append((proto, int(lo), int(hi or lo)))
    return out


def port_allowed(allowed: list[tuple[str, int, int]], proto: str, port: int) -> bool:
    """True if ``port``/``proto`` is inside one of the ``allowed`` ranges."""
    return any(p == proto and lo <= port <= hi for p, lo, hi in allowed)
