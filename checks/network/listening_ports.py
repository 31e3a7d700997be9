"""``network.listening_ports``: only allowed ports listen on non-loopback addresses.

Gather: every TCP socket in LISTEN and every bound, unconnected UDP socket of
``/proc/net/{tcp,tcp6,udp,udp6}`` (kernel ``net/ipv4/tcp_ipv4.c``, ``net/ipv4/udp.c``;
:mod:`aiaudit.linux.network.sockets`) on an address other than loopback.  Live only:
sockets are kernel state, of the scanner's network namespace.

Decide: a socket whose port is not in ``allowed`` fails; its owning process is named from
``/proc/<pid>/fd/*`` links (:mod:`aiaudit.linux.network.owners`; walked only when a socket
fails, and root is needed for other users' processes).  With ``firewall_aware`` a socket
the running firewall provably drops new connections to passes
(:mod:`aiaudit.linux.network.reach`).

Results: one per offending socket (``6006/tcp 0.0.0.0``), or one pass for all.
"""

from __future__ import annotations

from typing import Any, Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.network import procnet, sockets
from aiaudit.linux.network.owners import Owners, owner_text
from aiaudit.linux.network.reach import FIREWALL_AWARE_PARAM, firewall_note

SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "allowed": {"type": "array", "items": {"type": "string",
                                               "pattern": nf.PORT_SPEC_PATTERN},
                    "default": ["22/tcp"],
                    "description": "ports that may listen on non-loopback addresses (22/tcp, "
                                   "60000-61000/udp)"},
        "udp": {"type": "boolean", "default": True, "description": "also check UDP sockets"},
        "firewall_aware": FIREWALL_AWARE_PARAM,
    },
}


def run(ctx: CheckContext) -> Iterator[Result]:
    """Every non-loopback listening socket is on an allowed port."""
    host, p = ctx.host, ctx.params
    socks, first = sockets.start(host, "listening sockets")
    yield from first
    if socks is None:
        return
    allowed = nf.parse_port_specs(p["allowed"])
    allowed_txt = ", ".join(p["allowed"]) or "none"
    bad = [s for s in sockets.exposed(socks, p["udp"])
           if not nf.port_allowed(allowed, s.proto, s.port)]
    # only an unexpected listener needs its owner named: no walk of /proc otherwise
    owners = sockets.owners_for(host, socks) if bad else Owners({}, 0, True)
    for s in bad:
        yield _judge(ctx, socks, s, owners, allowed_txt)
    if not bad and not socks.problems:
        n = len(sockets.exposed(socks, p["udp"]))
        yield Result(Status.PASS, "listening sockets",
                     f"{n} non-loopback listening socket(s), all on allowed ports "
                     f"({allowed_txt})", expected=f"only {allowed_txt}", aspect=Aspect.RUNTIME,
                     evidence=sockets.tables_evidence())


def _judge(ctx: CheckContext, socks: sockets.Sockets, s: procnet.Socket, owners: Owners,
           allowed_txt: str) -> Result:
    """A socket on a port not allowed: a failure, or a pass behind a dropping firewall."""
    subject = f"{s.port}/{s.proto} {sockets.addr_text(s)}"
    dropped, note = firewall_note(ctx.host, s) if ctx.params["firewall_aware"] else (False, "")
    msg = f"{s.port}/{s.proto} listening on {sockets.addr_text(s)}, " \
          f"{owner_text(s, owners)}{note}"
    evidence = sockets.socket_evidence(socks, s, owners)
    if dropped:
        return Result(Status.PASS, subject, msg, expected=f"only {allowed_txt}",
                      actual=s.endpoint(), aspect=Aspect.RUNTIME, evidence=evidence)
    held_by = owners.by_inode.get(s.inode, ())
    names = sorted({o.comm for o in held_by})
    return Result(
        Status.FAIL, subject, msg + f"; allowed: {allowed_txt}",
        expected=f"only {allowed_txt} on non-loopback addresses", actual=s.endpoint(),
        aspect=Aspect.RUNTIME, evidence=evidence,
        remediation=Remediation(
            f"Bind {' / '.join(names) or 'the service'} to 127.0.0.1 (or a private "
            f"interface) or stop it; if {s.port}/{s.proto} must be reachable, add it to "
            "the rule's allowed list and admit it in the firewall.",
            (Snippet.command(sockets.ss_command(s), "show the socket and its process"),)),
        data={"proto": s.proto, "address": str(s.local), "port": s.port,
              "pids": [o.pid for o in held_by]})


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``network.listening_ports``."""
    return [
        CheckSpec(
            id="network.listening_ports",
            title="Only allowed ports listen on non-loopback addresses",
            run=run, params_schema=SCHEMA, modes=("live",),
            description=(
                "Reads /proc/net/tcp, tcp6, udp, udp6 (TCP LISTEN; UDP bound and "
                "unconnected), ignores loopback addresses, and fails for each socket on a "
                "port not in `allowed`, naming the owning process from /proc/<pid>/fd "
                "(root needed for other users' processes). The scanner's network namespace "
                "only."),
        ),
    ]
