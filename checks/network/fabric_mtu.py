"""``network.fabric_mtu``: the training fabric's network interfaces use a large MTU (live).

Gathers the RoCE netdevs (``/sys/class/infiniband/<dev>/device/net/<netdev>`` of devices
with an Ethernet port: :func:`aiaudit.linux.pci.rdma.roce_netdevs`), the interfaces of
``/sys/class/net`` matching the rule's globs, and each one's ``/sys/class/net/<if>/mtu``
(Documentation/ABI/testing/sysfs-class-net).  Decides: an MTU below ``min_mtu`` fails;
for a RoCE netdev the failure names the IB MTU RoCE then uses
(include/rdma/ib_addr.h ``iboe_get_mtu``: :func:`aiaudit.linux.pci.rdma.iboe_mtu`).
"""

from __future__ import annotations

import shlex
from typing import Any, Iterator, Mapping

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.linux.pci.rdma import iboe_mtu, roce_netdevs


def _interfaces(host: Host, patterns: list[str]) -> dict[str, str]:
    """Fabric netdev -> why it counts: the RoCE netdevs, then those the globs match."""
    import fnmatch

    chosen: dict[str, str] = {}
    for nd, dev in roce_netdevs(host):
        chosen[nd] = f"RoCE netdev of {dev}"
    for nd in host.listdir("/sys/class/net"):
        if any(fnmatch.fnmatchcase(nd, pat) for pat in patterns):
            chosen.setdefault(nd, "listed in interfaces")
    return chosen


def _judge(nd: str, why: str, mtu: int, p: Mapping[str, Any], path: str) -> Result:
    """One interface's MTU against ``min_mtu``."""
    ev = (Evidence.runtime(path, str(mtu)),)
    want = p["min_mtu"]
    if mtu >= want:
        return Result(Status.PASS, nd, f"{nd} ({why}) has MTU {mtu}", expected=f">= {want}",
                      actual=str(mtu), aspect=Aspect.RUNTIME, evidence=ev)
    ib = iboe_mtu(mtu)
    extra = f"; RoCE on it uses a {ib}-byte IB MTU" if ib and "RoCE" in why else ""
    return Result(Status.FAIL, nd, f"{nd} ({why}) has MTU {mtu}{extra}",
                  expected=f">= {want}", actual=str(mtu), aspect=Aspect.RUNTIME,
                  evidence=ev, remediation=Remediation(
                      f"Set MTU {max(want, 9000)} on {nd} in its persistent network "
                      "configuration (netplan `mtu:`, NetworkManager "
                      "`802-3-ethernet.mtu`, ifupdown `mtu`), matching the switch "
                      "ports.", (Snippet.command(
                          f"ip link set dev {shlex.quote(nd)} mtu {max(want, 9000)}",
                          "raise it now"),)))


def run(ctx: CheckContext) -> Iterator[Result]:
    """The training fabric's network interfaces have a large enough MTU."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield Result(Status.SKIP, "fabric mtu", "the interface MTU is live state; an offline "
                     "scan cannot see it")
        return
    chosen = _interfaces(host, list(p["interfaces"]))
    if not chosen:
        yield Result(Status.SKIP, "fabric mtu", "no RoCE interface and no interface listed in "
                     "the rule's interfaces")
        return
    for nd in sorted(chosen):
        path = f"/sys/class/net/{nd}/mtu"
        try:
            mtu = int(host.read_text(path).strip())
        except (HostError, ValueError) as exc:
            yield Result(Status.ERROR, nd, f"{path}: {exc}")
            continue
        yield _judge(nd, chosen[nd], mtu, p, path)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``network.fabric_mtu``."""
    return [CheckSpec(
        id="network.fabric_mtu", title="Training fabric interfaces use a large MTU",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False,
                       "properties": {
                           "min_mtu": {"type": "integer", "minimum": 68,
                                       "default": 4200},
                           "interfaces": {"type": "array",
                                          "items": {"type": "string"},
                                          "default": [],
                                          "description": "globs of fabric netdevs "
                                                         "besides RoCE ones"}}},
        description="RoCE netdevs (/sys/class/infiniband/*/device/net/*) and "
                    "interfaces matching the globs: /sys/class/net/<if>/mtu >= "
                    "min_mtu.")]
