"""What a firewall state does with new inbound connections, per address family.

Every base chain on the input hook is evaluated in priority order (:mod:`.model`): accept
ends only its chain, drop is final, a missing policy accepts.  The *default* is what a
port no rule names gets (a sentinel port per protocol); every port a rule names (and every
allowed port) is probed too, from an untrusted source and, when that is dropped, from a
source or interface the rules name (*restricted*).

The firewall checks judge two states: the running one (live scan of ``/`` with commands:
:mod:`.running`) and the boot configuration (:mod:`.boot`), each for IPv4 and IPv6
(:func:`cases`).
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.core.model import Aspect
from aiaudit.core.startup.records import record
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.netfilter.boot import boot
from aiaudit.linux.netfilter.state import FirewallState

PortDecision = tuple[str, int, int, nf.Decision]
"""``(proto, lo, hi, decision)``: what the input path does with a port range."""

IPV6_PARAM: dict[str, Any] = {"type": "boolean", "default": True,
                              "description": "also judge IPv6 (skip when the host has IPv6 off)"}
"""The firewall checks' ``ipv6`` parameter."""

DESCRIPTION = (
    "Running state (live scan of /): nft -j list ruleset plus iptables-legacy "
    "(iptables -V). Boot: nftables.service's file with includes, ufw (ENABLED=yes and "
    "ufw.service enabled), firewalld (DefaultZone; /etc zones over /usr/lib), "
    "/etc/iptables/rules.v4|v6 with netfilter-persistent (RHEL: /etc/sysconfig/"
    "iptables with iptables.service). Every base chain on the input "
    "hook is evaluated in priority order: accept ends only its chain, drop is final, a "
    "missing policy accepts. Results per address family and state.")
"""The firewall checks' description: where the state comes from and how it is judged."""


@record
class Evaluation:
    """What one address family's input path does."""

    family: int
    chains: tuple[nf.Chain, ...]
    default: dict[str, nf.Decision]
    """Decision for a port no rule names, per protocol (``tcp``, ``udp``)."""
    admitted: tuple[PortDecision, ...]
    """Ports named by rules (or allowed) that new connections reach (accept or maybe)."""
    restricted: tuple[PortDecision, ...] = ()
    """Ports only connections from a named source or interface reach."""

    def open_default(self) -> list[str]:
        """The protocols whose unlisted ports are not provably dropped."""
        return [p for p, d in self.default.items() if d.outcome is not nf.Outcome.DROP]


def evaluate(rs: nf.Ruleset, family: int, allowed: list[tuple[str, int, int]]
             ) -> Evaluation:
    """Probe the default and every port a rule names (and every ``allowed`` range)."""
    default = {}
    for proto in ("tcp", "udp"):
        port = nf.sentinel_port(rs, proto, {p for pr, lo, hi in allowed if pr == proto
                                            for p in (lo, hi)})
        default[proto] = nf.decide(rs, nf.Probe(family, proto, port))
    probes = {(proto, lo, hi) for proto, lo, hi in rs.ports_mentioned() | set(allowed)
              if proto in ("tcp", "udp")}
    admitted = []
    restricted = []
    for proto, lo, hi in sorted(probes):
        d = nf.decide(rs, nf.Probe(family, proto, lo))
        if d.outcome is not nf.Outcome.DROP:
            admitted.append((proto, lo, hi, d))
            continue
        dr = nf.decide(rs, nf.Probe(family, proto, lo, restricted=True))
        if dr.outcome is not nf.Outcome.DROP:
            restricted.append((proto, lo, hi, dr))
    return Evaluation(family, tuple(rs.input_chains(family)), default, tuple(admitted),
                      tuple(restricted))


def ipv6_off(host: Host) -> str | None:
    """Why IPv6 is not judged on a live host (not available, or disabled); ``None``
    offline or where it is on."""
    if not host.live:
        return None
    if not host.exists("/proc/net/if_inet6"):
        return "IPv6 is not available on this kernel (/proc/net/if_inet6 absent)"
    try:
        if host.read_text("/proc/sys/net/ipv6/conf/all/disable_ipv6").strip() == "1" and \
                host.read_text("/proc/sys/net/ipv6/conf/default/disable_ipv6").strip() == "1":
            return "IPv6 is disabled (net.ipv6.conf.all/default.disable_ipv6 = 1)"
    except HostError:
        pass
    return None


def states(host: Host) -> list[tuple[str, Aspect, FirewallState]]:
    """(label, aspect, state) of the states to judge: the running one where commands run
    on a live host, and the boot configuration."""
    out = []
    if host.live and host.allow_commands:
        from aiaudit.linux.netfilter.running import running  # commands: live on / only

        out.append(("running", Aspect.RUNTIME, running(host)))
    out.append(("boot", Aspect.PERSISTED, boot(host)))
    return out


@record
class Case:
    """One address family of one state: evaluated, or why it is not."""

    label: str
    """``running`` or ``boot``."""
    aspect: Aspect
    family: int
    state: FirewallState
    evaluation: Evaluation | None = None
    skip: str | None = None
    """Why the family is not judged (IPv6 off, or not asked for)."""
    error: str | None = None
    """Why the state could not be determined."""

    @property
    def subject(self) -> str:
        """``ipv4 (boot)``."""
        return f"ipv{self.family} ({self.label})"


def cases(host: Host, ipv6: bool, allowed: list[tuple[str, int, int]]) -> Iterator[Case]:
    """Per state and address family: the evaluation to judge, or a skip or error reason."""
    v6off = ipv6_off(host) if ipv6 else "not judged (ipv6: false)"
    for label, aspect, st in states(host):
        for fam in (4, 6):
            if fam == 6 and v6off:
                yield Case(label, aspect, fam, st, skip=v6off)
            elif st.problems or st.ruleset is None:
                yield Case(label, aspect, fam, st, error=(
                    f"cannot determine the {label} firewall: " + "; ".join(st.problems)))
            else:
                yield Case(label, aspect, fam, st, evaluate(st.ruleset, fam, allowed))
