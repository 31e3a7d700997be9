"""``infiniband.ports``: every InfiniBand/RoCE port is ACTIVE, physically LinkUp, at the
expected rate and width (live).

Gathers each port's ``state``, ``phys_state``, ``rate`` and ``link_layer`` from
``/sys/class/infiniband/<dev>/ports/<n>/`` (:mod:`aiaudit.linux.infiniband.ports`, read once
per run).  Decides as ``ibstat`` shows it: a port that is not ACTIVE carries no traffic
(DOWN/Polling: no cable or peer; INIT/LinkUp: the subnet manager has not configured it);
a port ACTIVE but not LinkUp is retraining; an ACTIVE port below ``min_rate_gbps`` or with
fewer lanes than ``width`` (by default the fastest rate and widest width of the node's
active ports of the same link layer) trained down: a degraded cable, transceiver or lane.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
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
from aiaudit.linux.infiniband.ports import IB, Port, devices, ports

FIX_DOWN = Remediation("Check the cable and the switch port (`ibstat`, `ibdiagnet`, "
                       "`mlxlink -d <dev> -p <port>`); a port in INIT waits for the subnet "
                       "manager (opensm or UFM).")
FIX_SLOW = Remediation("Reseat or replace the cable or transceiver; `mlxlink` shows which "
                       "lanes are down and the link's error counters.")


def _want(pts: list[Port], layer: str | None, p: Mapping[str, Any]) -> tuple[float, int, str]:
    """(rate, width, basis) a port of ``layer`` must reach."""
    active = [pt.rate for pt in pts if pt.rate and pt.state and pt.state[1] == "ACTIVE"
              and pt.link_layer == layer]
    rate = p["min_rate_gbps"] or max((r.gbps for r in active), default=0)
    width = p["width"] or max((r.width or 0 for r in active), default=0)
    basis = ("the rule's min_rate_gbps/width" if p["min_rate_gbps"] and p["width"] else
             f"the fastest active {layer} port of this node")
    return rate, width, basis


def _evidence(pt: Port) -> tuple[Evidence, ...]:
    assert pt.state and pt.rate
    r = pt.rate
    shown = (f"{r.gbps:g} Gb/sec" + (f" ({r.width}X{' ' + r.speed if r.speed else ''})"
                                     if r.width else ""))
    phys = (Evidence.runtime(f"{pt.base}/phys_state", f"{pt.phys_state[0]}: "
                             f"{pt.phys_state[1]}"),) if pt.phys_state else ()
    return (Evidence.runtime(f"{pt.base}/state", f"{pt.state[0]}: {pt.state[1]}"), *phys,
            Evidence.runtime(f"{pt.base}/rate", shown))


def judge(pt: Port, want: tuple[float, int, str]) -> Result:
    """One port: ACTIVE and LinkUp, at ``want``'s rate and width or more."""
    if pt.error is not None or not (pt.state and pt.rate):
        return Result(Status.ERROR, pt.subject, f"port attributes unreadable: {pt.error}",
                      evidence=(Evidence.runtime(pt.base),))
    rate, width, basis = want
    r, ev = pt.rate, _evidence(pt)
    exp = f"ACTIVE, LinkUp, >= {rate:g} Gb/s" + (f" at {width}X" if width else "")
    phys = pt.phys_state[1] if pt.phys_state else "LinkUp"  # absent: judged by state
    act = (f"{pt.state[1]}, {phys}, {r.gbps:g} Gb/s"
           + (f" at {r.width}X" if r.width else ""))
    data = {"link_layer": pt.link_layer, "rate_gbps": r.gbps, "width": r.width,
            "speed": r.speed}

    def out(status: Status, msg: str, fix: Remediation | None = None) -> Result:
        return Result(status, pt.subject, f"{pt.link_layer} port {msg}", expected=exp,
                      actual=act, aspect=Aspect.RUNTIME, evidence=ev, data=data,
                      remediation=fix if status is Status.FAIL else None)

    if pt.state[1] != "ACTIVE":
        why = ("" if pt.phys_state is None else
               " (physically LinkUp: the subnet manager has not brought it up)"
               if phys == "LinkUp" else f" (physical state {phys}: no link to a peer)")
        return out(Status.FAIL, f"is {pt.state[1]}{why}", FIX_DOWN)
    if phys != "LinkUp":
        return out(Status.FAIL, f"is ACTIVE but its physical state is {phys}",
                   FIX_DOWN)
    if width and r.width is not None and r.width < width:
        return out(Status.FAIL, f"is ACTIVE with {r.width}X at {r.gbps:g} Gb/s, fewer "
                   f"lanes than {width}X ({basis}): lanes are down", FIX_SLOW)
    if r.gbps < rate:
        return out(Status.FAIL, f"is ACTIVE at {r.gbps:g} Gb/s, below {rate:g} Gb/s "
                   f"({basis}): a degraded cable or lane", FIX_SLOW)
    return out(Status.PASS, f"is ACTIVE at {r.gbps:g} Gb/s"
               + (f" ({r.width}X{' ' + r.speed if r.speed else ''})" if r.width else ""))


def run(ctx: CheckContext) -> Iterator[Result]:
    """Every selected InfiniBand/RoCE port is ACTIVE, LinkUp, at full rate and width."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield Result(Status.SKIP, "rdma ports", "InfiniBand/RoCE port state is live state "
                     "(sysfs); an offline root has none")
        return
    if not devices(host):
        yield Result(Status.SKIP, "rdma ports", "no RDMA device in /sys/class/infiniband",
                     evidence=(Evidence.runtime(IB),))
        return
    pts = [pt for pt in ports(host)
           if (pt.error is not None or pt.link_layer in p["link_layers"])
           and any(fnmatchcase(pt.subject, pat) or fnmatchcase(pt.dev, pat)
                   for pat in p["ports"])]
    if not pts:
        yield Result(Status.SKIP, "rdma ports", f"no {'/'.join(p['link_layers'])} port "
                     f"matching {', '.join(p['ports'])}")
        return
    for pt in pts:
        yield judge(pt, _want(pts, pt.link_layer, p))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``infiniband.ports``."""
    return [CheckSpec(
        id="infiniband.ports", title="InfiniBand/RoCE ports are ACTIVE at full rate and width",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "min_rate_gbps": {"type": "number", "minimum": 0, "default": 0,
                              "description": "0: the fastest active port of the same link "
                                             "layer on the node"},
            "width": {"type": "integer", "enum": [0, 1, 2, 4, 8, 12], "default": 0,
                      "description": "lanes (4 for 4X); 0: the widest active port of the "
                                     "same link layer on the node"},
            "link_layers": {"type": "array", "uniqueItems": True,
                            "items": {"enum": ["InfiniBand", "Ethernet"]},
                            "default": ["InfiniBand", "Ethernet"]},
            "ports": {"type": "array", "items": {"type": "string", "minLength": 1},
                      "default": ["*"],
                      "description": "shell patterns of the ports judged, as dev/port or "
                                     "dev (mlx5_[0-7]); others are ignored"}}},
        description="/sys/class/infiniband/*/ports/*: state ACTIVE, phys_state LinkUp, "
                    "rate >= min_rate_gbps and width >= width (default: the node's "
                    "fastest and widest active port of the same link layer).")]
