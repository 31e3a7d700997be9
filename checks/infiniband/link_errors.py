"""``infiniband.link_errors``: no InfiniBand/RoCE link flapped or logged symbol errors since
the previous scan (live, with ``--state``).

Gathers each port's ``counters/symbol_error``, ``link_downed`` and ``link_error_recovery``
(:mod:`aiaudit.linux.infiniband.ports`) and the previous scan's values for the same rule and
port (:mod:`aiaudit.linux.infiniband.flapping`).  Decides: growth above the rule's
``max_growth`` for a counter fails (LinkDowned or LinkErrorRecovery growth is a link that
went down or retrained while a job ran: flapping); a counter at its saturation value
(65535 or 255) fails, since growth can no longer be seen.  Without a previous scan, after a
reboot or a counter reset, the values are the new baseline (skip, recorded in the result
for the next ``--state`` run).  Ports without a PMA (``N/A (no PMA)``) are not judged.
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
from aiaudit.linux.infiniband import flapping
from aiaudit.linux.infiniband.ports import ERROR_COUNTERS, IB, Port, devices, ports

DEFAULT_MAX_GROWTH = {"symbol_error": 10, "link_downed": 0, "link_error_recovery": 0}
"""aiaudit's defaults: any link-down or link-recovery event between two scans is a flap;
a few symbol errors between scans are tolerated (a marginal but working cable shows some)."""

FIX = Remediation("Drain the node and check the link: `mlxlink -d <dev> -p <port> -c` "
                  "(errors per lane, BER), `ibdiagnet`; reseat or replace the cable or "
                  "transceiver, then clear the counters (`perfquery -x -R`).")


def _failure(pt: Port, changes: list[flapping.Change], limits: Mapping[str, int],
             ev: tuple[Evidence, ...], data: dict[str, Any]) -> Result | None:
    """The failing result when a counter grew past its limit or saturated."""
    sat = [c for c in changes if c.saturated]
    grown = [c for c in changes if c.growth > limits.get(c.name, 0)]
    if not (sat or grown):
        return None
    parts = [f"{c.name} +{c.growth} (now {c.now}, limit {limits.get(c.name, 0)})"
             for c in grown]
    parts += [f"{c.name} saturated at {ERROR_COUNTERS[c.name]}" for c in sat
              if c not in grown]
    data["growth"] = {c.name: c.growth for c in changes if c.before is not None}
    return Result(Status.FAIL, pt.subject, f"{pt.link_layer} link errors since the "
                  f"previous scan: {'; '.join(parts)}",
                  expected="no growth above " + ", ".join(
                      f"{k} {v}" for k, v in sorted(limits.items())),
                  actual=", ".join(parts), aspect=Aspect.RUNTIME, evidence=ev,
                  data=data, remediation=FIX)


def _judge(pt: Port, before: flapping.Previous | None, boot: str | None,
           limits: Mapping[str, int], have_previous: bool) -> Result:
    """One port's counters against the previous scan's."""
    changes = flapping.compare(pt, before, boot)
    now = {c.name: c.now for c in changes}
    data: dict[str, Any] = {"counters": now, "boot_id": boot}
    ev = tuple(Evidence.runtime(f"{pt.base}/counters/{c.name}", str(c.now)) for c in changes)
    failed = _failure(pt, changes, limits, ev, data)
    if failed is not None:
        return failed
    based = [c for c in changes if c.before is not None]
    if not based:
        why = ("no previous scan (run with --state FILE to compare)" if not have_previous
               else "no comparable previous value (first time seen, reboot or counters "
                    "reset)")
        return Result(Status.SKIP, pt.subject, f"{why}; baseline recorded: "
                      + ", ".join(f"{k} {v}" for k, v in now.items()),
                      aspect=Aspect.RUNTIME, evidence=ev, data=data)
    data["growth"] = {c.name: c.growth for c in based}
    return Result(Status.PASS, pt.subject, "no link error growth since the previous scan ("
                  + ", ".join(f"{c.name} +{c.growth}" for c in based) + ")",
                  expected="no growth", actual="within limits", aspect=Aspect.RUNTIME,
                  evidence=ev, data=data)


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per port with error counters."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield Result(Status.SKIP, "rdma ports", "port error counters are live state (sysfs); "
                     "an offline root has none")
        return
    if not devices(host):
        yield Result(Status.SKIP, "rdma ports", "no RDMA device in /sys/class/infiniband",
                     evidence=(Evidence.runtime(IB),))
        return
    limits = {**DEFAULT_MAX_GROWTH, **p["max_growth"]}
    limits = {k: v for k, v in limits.items() if k in p["counters"]}
    prev = flapping.previous_ports(ctx.settings, ctx.rule_id)
    boot = flapping.boot_id(host)
    judged = 0
    for pt in ports(host):
        if not any(fnmatchcase(pt.subject, pat) or fnmatchcase(pt.dev, pat)
                   for pat in p["ports"]):
            continue
        if pt.error is not None:
            yield Result(Status.ERROR, pt.subject, f"port attributes unreadable: {pt.error}")
            continue
        pt = Port(pt.dev, pt.num, pt.link_layer, pt.state, pt.phys_state, pt.rate,
                  tuple((k, v) for k, v in pt.counters if k in limits and v is not None))
        if not pt.counters:
            continue
        judged += 1
        yield _judge(pt, (prev or {}).get(pt.subject), boot, limits, prev is not None)
    if not judged:
        yield Result(Status.SKIP, "rdma ports", "no port with error counters (devices "
                     "without a PMA show N/A)")


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``infiniband.link_errors``."""
    names = list(ERROR_COUNTERS)
    return [CheckSpec(
        id="infiniband.link_errors",
        title="No InfiniBand/RoCE link flapped or logged errors since the previous scan",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "counters": {"type": "array", "uniqueItems": True, "items": {"enum": names},
                         "default": names},
            "max_growth": {"type": "object", "additionalProperties": False,
                           "properties": {n: {"type": "integer", "minimum": 0}
                                          for n in names},
                           "default": dict(DEFAULT_MAX_GROWTH),
                           "description": "growth tolerated between two scans, per counter "
                                          "(a counter left out keeps its default)"},
            "ports": {"type": "array", "items": {"type": "string", "minLength": 1},
                      "default": ["*"]}}},
        description="/sys/class/infiniband/*/ports/*/counters/{symbol_error,link_downed,"
                    "link_error_recovery} compared with the previous --state scan: growth "
                    "above max_growth (default: any link down or recovery, more than 10 "
                    "symbol errors) or a saturated counter fails; the first scan records "
                    "the baseline.")]
