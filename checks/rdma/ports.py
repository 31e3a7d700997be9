"""``rdma.ports``: every RDMA port is ACTIVE at the expected rate (live).

Gathers each port of each RDMA device: ``/sys/class/infiniband/<dev>/ports/<n>/state``,
``rate`` and ``link_layer`` (Documentation/ABI/stable/sysfs-class-infiniband; formats in
:mod:`aiaudit.linux.pci.sysfs`).  Decides: a port of a listed link layer that is not
ACTIVE fails (INIT waits for the subnet manager), and so does an ACTIVE one below
``min_rate_gbps`` or, by default, below the node's fastest active port (a degraded cable
or lane trains at a lower rate).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.pci import sysfs
from aiaudit.linux.pci.rdma import IB, rdma_devices


@record
class Port:
    """One RDMA port as sysfs shows it (``error`` where it could not be read)."""

    subject: str
    """``<dev>/<port>``."""
    base: str
    layer: str | None = None
    state: tuple[int, str] | None = None
    rate: float | None = None
    error: str | None = None


def _ports(host: Host, layers: list[str]) -> list[Port]:
    """The ports of ``layers`` (and every port that cannot be read), device by device."""
    out = []
    for dev in rdma_devices(host):
        for port in sorted(host.listdir(f"{IB}/{dev}/ports"), key=lambda n: n.zfill(4)):
            base = f"{IB}/{dev}/ports/{port}"
            try:
                layer = (host.try_read_text(f"{base}/link_layer") or "Unknown").strip()
                state = sysfs.parse_port_state(host.read_text(f"{base}/state"))
                rate = sysfs.parse_rate(host.read_text(f"{base}/rate"))
            except (HostError, ParseError) as exc:
                out.append(Port(f"{dev}/{port}", base, error=str(exc)))
                continue
            if layer in layers:
                out.append(Port(f"{dev}/{port}", base, layer, state, rate))
    return out


def _judge(pt: Port, want: float, basis: str) -> Result:
    """One port: ACTIVE, at ``want`` Gb/s or more."""
    if pt.error is not None or pt.state is None or pt.rate is None:
        return Result(Status.ERROR, pt.subject, f"port attributes unreadable: {pt.error}")
    state, rate = pt.state, pt.rate
    ev = (Evidence.runtime(f"{pt.base}/state", f"{state[0]}: {state[1]}"),
          Evidence.runtime(f"{pt.base}/rate", f"{rate:g} Gb/sec"))
    exp = f"ACTIVE at >= {want:g} Gb/s"
    act = f"{state[1]} at {rate:g} Gb/s"
    if state[1] != "ACTIVE":
        fix = Remediation("Check the cable and switch port (`ibstat`, `ibdiagnet`); an "
                          "INIT port waits for the subnet manager (opensm/UFM).")
        return Result(Status.FAIL, pt.subject, f"{pt.layer} port is {state[1]}",
                      expected=exp, actual=act, aspect=Aspect.RUNTIME, evidence=ev,
                      remediation=fix)
    if rate < want:
        return Result(Status.FAIL, pt.subject, f"{pt.layer} port is ACTIVE at {rate:g} Gb/s, "
                      f"below {want:g} Gb/s ({basis}): a degraded cable or lane",
                      expected=exp, actual=act, aspect=Aspect.RUNTIME, evidence=ev,
                      remediation=Remediation("Replace or reseat the cable/transceiver; "
                                              "check `mlxlink` for the lanes."))
    return Result(Status.PASS, pt.subject, f"{pt.layer} port is ACTIVE at {rate:g} Gb/s",
                  expected=exp, actual=act, aspect=Aspect.RUNTIME, evidence=ev)


def _wanted(ports: list[Port], p: Mapping[str, Any]) -> tuple[float, str]:
    """(the rate every port must reach, why): the rule's, else the fastest active port's."""
    active = [pt.rate for pt in ports
              if pt.state and pt.state[1] == "ACTIVE" and pt.rate is not None]
    want = p["min_rate_gbps"] or (max(active) if active else 0)
    basis = ("min_rate_gbps" if p["min_rate_gbps"] else
             "the fastest active port of this node")
    return want, basis


def run(ctx: CheckContext) -> Iterator[Result]:
    """Every RDMA port is ACTIVE at the expected rate."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield Result(Status.SKIP, "rdma ports", "the RDMA port state is live state; an "
                     "offline scan cannot see it")
        return
    if not rdma_devices(host):
        yield Result(Status.SKIP, "rdma ports", "no RDMA device in /sys/class/infiniband",
                     evidence=(Evidence.runtime(IB),))
        return
    ports = _ports(host, p["link_layers"])
    if not ports:
        yield Result(Status.SKIP, "rdma ports", f"no {'/'.join(p['link_layers'])} RDMA port")
        return
    want, basis = _wanted(ports, p)
    for pt in ports:
        yield _judge(pt, want, basis)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``rdma.ports``."""
    return [CheckSpec(
        id="rdma.ports", title="RDMA ports are ACTIVE at the expected rate",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False,
                       "properties": {
                           "min_rate_gbps": {"type": "number", "minimum": 0,
                                             "default": 0,
                                             "description": "0: the fastest active "
                                                            "port of the node"},
                           "link_layers": {"type": "array", "uniqueItems": True,
                                           "items": {"enum": ["InfiniBand",
                                                              "Ethernet"]},
                                           "default": ["InfiniBand", "Ethernet"]}}},
        description="/sys/class/infiniband/*/ports/*/state ACTIVE and rate >= "
                    "min_rate_gbps (default: the node's fastest active port).")]
