"""``network.exposed_services``: no well-known ML or ops service is reachable from the
network.

Gather: the non-loopback listening sockets of ``/proc/net/{tcp,tcp6,udp,udp6}``
(:mod:`aiaudit.linux.network.sockets`; live only, the scanner's network namespace) and
their owning processes from ``/proc/<pid>/fd/*`` links (:mod:`aiaudit.linux.network.owners`,
one bounded walk per run; root is needed for other users' processes).

Decide: each socket is matched against the service table ``data/network_services.yaml``
(Jupyter, TensorBoard, Ray, MLflow, Docker API, DCGM...: port, protocol and process names;
:mod:`aiaudit.linux.network.services`); services in ``ignore`` are accepted.  With
``firewall_aware`` a service the running firewall provably drops new connections to
passes (:mod:`aiaudit.linux.network.reach`).

Results: one per service found (``TensorBoard 6006/tcp 0.0.0.0``), or one pass.
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
from aiaudit.linux.network import procnet, sockets
from aiaudit.linux.network.owners import Owners, owner_text
from aiaudit.linux.network.reach import FIREWALL_AWARE_PARAM, firewall_note
from aiaudit.linux.network.services import Service, identify, load_services

SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "ignore": {"type": "array", "items": {"type": "string"}, "default": [],
                   "description": "service names (as in the table) accepted on this host"},
        "firewall_aware": FIREWALL_AWARE_PARAM,
    },
}


def run(ctx: CheckContext) -> Iterator[Result]:
    """Well-known ML and ops services listening on non-loopback addresses."""
    host = ctx.host
    socks, first = sockets.start(host, "exposed services")
    yield from first
    if socks is None:
        return
    services = host.memo(("net-services",), load_services)
    ignore = set(ctx.params["ignore"])
    cand = sockets.exposed(socks)
    owners = sockets.owners_for(host, socks)
    found = 0
    for s in cand:
        held_by = owners.by_inode.get(s.inode, ())
        svc = identify(services, s.proto, s.port, held_by, bool(held_by))
        if svc is None or svc.name in ignore:
            continue
        found += 1
        yield _judge(ctx, socks, s, owners, svc)
    if not found and not socks.problems:
        yield Result(Status.PASS, "exposed services",
                     f"no well-known ML or ops service listens on a non-loopback address "
                     f"({len(cand)} non-loopback listening socket(s) checked)",
                     aspect=Aspect.RUNTIME, evidence=sockets.tables_evidence())


def _judge(ctx: CheckContext, socks: sockets.Sockets, s: procnet.Socket, owners: Owners,
           svc: Service) -> Result:
    """A service reachable from the network: a failure, or a pass behind a dropping
    firewall."""
    dropped, note = firewall_note(ctx.host, s) if ctx.params["firewall_aware"] else (False, "")
    addr = sockets.addr_text(s)
    msg = f"{svc.name} ({s.port}/{s.proto}) listening on {addr}, " \
          f"process {owner_text(s, owners)}{note}"
    subject = f"{svc.name} {s.port}/{s.proto} {addr}"
    data = {"service": svc.name, "proto": s.proto, "address": str(s.local),
            "port": s.port, "pids": [o.pid for o in owners.by_inode.get(s.inode, ())],
            "reference": svc.reference}
    evidence = sockets.socket_evidence(socks, s, owners)
    if dropped:
        return Result(Status.PASS, subject, msg, aspect=Aspect.RUNTIME, evidence=evidence,
                      data=data)
    return Result(
        Status.FAIL, subject, f"{msg}: {svc.risk}",
        expected="bound to loopback or not running", actual=s.endpoint(),
        aspect=Aspect.RUNTIME, evidence=evidence,
        remediation=Remediation(
            f"{svc.name}: {svc.fix}. See {svc.reference}",
            (Snippet.command(sockets.ss_command(s), "show the socket and its process"),)),
        data=data)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``network.exposed_services``."""
    return [
        CheckSpec(
            id="network.exposed_services",
            title="No ML or ops service (Jupyter, Ray, MLflow, Docker API...) is reachable "
                  "from the network",
            run=run, params_schema=SCHEMA, modes=("live",),
            description=(
                "Matches non-loopback listening sockets against a table of well-known ML "
                "and ops services (port, protocol and process names; "
                "data/network_services.yaml) and fails for each one found."),
        ),
    ]
