"""Whether new connections reach a listening socket through the running firewall.

A socket bound to ``::`` also takes IPv4 unless ``net.ipv6.bindv6only`` is 1 (ipv6(7)); a
socket's own ``IPV6_V6ONLY`` is not visible in ``/proc``, so the conservative answer is
both families.  The running firewall is :mod:`aiaudit.linux.netfilter.running`, loaded
only when a rule asks (``firewall_aware``).
"""

from __future__ import annotations

from typing import Any

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.network import procnet

FIREWALL_AWARE_PARAM: dict[str, Any] = {
    "type": "boolean", "default": False,
    "description": "pass a socket the running firewall provably drops new "
                   "connections to (for every address family it accepts)"}
"""The network checks' ``firewall_aware`` parameter."""


def families(host: Host, s: procnet.Socket) -> tuple[int, ...]:
    """Address families that reach the socket: a ``::`` socket also takes IPv4 unless
    ``net.ipv6.bindv6only`` is 1 (ipv6(7); a socket's own IPV6_V6ONLY is not visible in
    /proc, so the conservative answer is both)."""
    if s.local.version == 4:
        return (4,)
    if not s.wildcard:
        return (6,)
    try:
        v6only = host.read_text("/proc/sys/net/ipv6/bindv6only").strip() == "1"
    except HostError:
        v6only = False
    return (6,) if v6only else (4, 6)


def firewall_note(host: Host, s: procnet.Socket) -> tuple[bool, str]:
    """(dropped, note): does the running firewall drop new connections to ``s`` for
    every family that reaches it?"""
    from aiaudit.linux.netfilter.running import running  # only for firewall_aware rules

    try:
        live = running(host)
    except HostError as exc:
        return False, f" (running firewall unknown: {exc})"
    if live.ruleset is None:
        return False, ""
    outs = [nf.decide(live.ruleset, nf.Probe(f, s.proto, s.port)).outcome
            for f in families(host, s)]
    if all(o is nf.Outcome.DROP for o in outs):
        return True, " but the running firewall drops new connections to it"
    return False, ""
