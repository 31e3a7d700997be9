"""Node identity across reports: a node is its host name plus its machine id.

machine-id(5) says the id "uniquely identifies the host" and must not be shared: an image
cloned without emptying ``/etc/machine-id`` gives every clone the same id (journald,
systemd-networkd's DHCP client id and D-Bus then mistake them for one machine).  So one
machine id under several host names is a finding, and so is one host name reported with
different machine ids (a node reinstalled or renamed while the old report is still
collected, or two nodes sharing a name).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from aiaudit.fleet.model import IdentityFinding

CLONED_SEVERITY = "high"
"""A shared machine id breaks journald, DHCP client ids and D-Bus: like a high failure."""
RENAMED_SEVERITY = "medium"


def findings(nodes: Iterable[tuple[str, str | None]]) -> tuple[IdentityFinding, ...]:
    """The identity findings among ``(hostname, machine_id)`` node keys (each key once)."""
    by_id: dict[str, set[str]] = defaultdict(set)
    by_name: dict[str, set[str]] = defaultdict(set)
    for host, mid in nodes:
        if mid:
            by_id[mid].add(host)
            by_name[host].add(mid)
    out = [IdentityFinding("duplicate-machine-id", CLONED_SEVERITY, mid, tuple(sorted(hosts)),
                           (mid,))
           for mid, hosts in sorted(by_id.items()) if len(hosts) > 1]
    out += [IdentityFinding("duplicate-hostname", RENAMED_SEVERITY, host, (host,),
                            tuple(sorted(ids)))
            for host, ids in sorted(by_name.items()) if len(ids) > 1]
    return tuple(out)
