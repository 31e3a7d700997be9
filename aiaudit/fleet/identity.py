"""Which reports are one node, and which nodes share what should be theirs alone.

A node is its machine id and its DMI product UUID; the host name is a label (issue 29).
Debootstrap and many image builders copy the builder's host name, so different machines
share names; golden images cloned without emptying ``/etc/machine-id`` share machine ids
(machine-id(5): the id "uniquely identifies the host", and journald, systemd-networkd's DHCP
client id and D-Bus mistake clones for one machine); cloned virtual machines share the
product UUID.  So reports are grouped into nodes by both ids, and every sharing is a
finding, never a silent merge:

- two reports with the same machine id and product UUID are one node, whatever their host
  names (a node renamed, or a report replayed under its identity: a :class:`Conflict` when
  the reports differ);
- a report without a readable product UUID (a scan not run as root, an offline root)
  joins the one node with its machine id that was reported under its host name, else it
  is its own node, keyed by machine id and host name (without a UUID, a machine id under
  two names cannot tell a clone from a rename, so both count, and the shared id is a
  finding);
- a report with neither id is keyed by its host name;
- placeholder UUIDs (all zeros, all ``f``, a common firmware default) count as unknown
  (:data:`aiaudit.fleet.extract.PLACEHOLDER_UUIDS`).

Findings between distinct nodes: ``duplicate-machine-id`` (high: the image was cloned),
``duplicate-hostname`` (medium: a scheduler or an SSH config cannot tell the machines
apart), ``duplicate-product-uuid`` (low: a cloned virtual machine, or a reinstalled node
whose old report is still read).  The resolution depends only on the set of reports, not
on the order they are read in.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from aiaudit.fleet.model import IdentityFinding, Node

CLONED_SEVERITY = "high"
"""A shared machine id breaks journald, DHCP client ids and D-Bus: like a high failure."""
RENAMED_SEVERITY = "medium"
"""Two machines under one host name: Slurm, SSH and monitoring see one."""
UUID_SEVERITY = "low"

Identity = tuple[str, "str | None", "str | None"]
"""``(hostname, machine_id, product_uuid)`` of one report."""
NodeKey = tuple[str, str, str]


def resolve(reports: Sequence[Identity]) -> list[NodeKey]:
    """The node key of each report (same key: same node); order-independent."""
    keys: list[NodeKey | None] = [None] * len(reports)
    strong_names: dict[NodeKey, set[str]] = defaultdict(set)
    for i, (host, mid, uuid) in enumerate(reports):
        if uuid is not None:
            keys[i] = ("uuid", mid or "", uuid)
            strong_names[("uuid", mid or "", uuid)].add(host)
    by_mid: dict[str, list[NodeKey]] = defaultdict(list)
    for key in strong_names:
        if key[1]:
            by_mid[key[1]].append(key)
    for i, (host, mid, uuid) in enumerate(reports):
        if uuid is not None:
            continue
        if mid is None:
            keys[i] = ("name", "", host)
            continue
        same = [k for k in by_mid.get(mid, ()) if host in strong_names[k]]
        keys[i] = same[0] if len(same) == 1 else ("mid", mid, host)
    return [k for k in keys if k is not None]


def findings(nodes: Sequence[Node]) -> tuple[IdentityFinding, ...]:
    """Machine ids, host names and product UUIDs shared by distinct ``nodes``."""
    by_mid: dict[str, list[int]] = defaultdict(list)
    by_name: dict[str, list[int]] = defaultdict(list)
    by_uuid: dict[str, list[int]] = defaultdict(list)
    for i, n in enumerate(nodes):
        if n.machine_id:
            by_mid[n.machine_id].append(i)
        for name in n.hostnames:
            by_name[name].append(i)
        if n.product_uuid:
            by_uuid[n.product_uuid].append(i)

    def ids(which: list[int]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        mids = sorted({nodes[i].machine_id or "" for i in which} - {""})
        uuids = sorted({nodes[i].product_uuid or "" for i in which} - {""})
        return tuple(mids), tuple(uuids)

    out = [IdentityFinding("duplicate-machine-id", CLONED_SEVERITY, mid, tuple(which),
                           *ids(which))
           for mid, which in sorted(by_mid.items()) if len(which) > 1]
    out += [IdentityFinding("duplicate-hostname", RENAMED_SEVERITY, name, tuple(which),
                            *ids(which))
            for name, which in sorted(by_name.items()) if len(which) > 1]
    out += [IdentityFinding("duplicate-product-uuid", UUID_SEVERITY, uuid, tuple(which),
                            *ids(which))
            for uuid, which in sorted(by_uuid.items()) if len(which) > 1]
    return tuple(out)


def describe(f: IdentityFinding) -> str:
    """One line for a finding (text output)."""
    n = len(f.nodes)
    if f.kind == "duplicate-machine-id":
        known = len(f.product_uuids)
        why = (f"{known} different product UUIDs: an image cloned without emptying "
               f"/etc/machine-id" if known > 1 else
               "product UUIDs not readable: an image cloned without emptying "
               "/etc/machine-id, or one node renamed")
        return f"machine id {f.key} is shared by {n} nodes ({why})"
    if f.kind == "duplicate-hostname":
        return (f"host name {f.key} names {n} nodes (machine ids "
                f"{', '.join(f.machine_ids) or 'unknown'}): different machines, one name")
    return (f"product UUID {f.key} is shared by {n} nodes with machine ids "
            f"{', '.join(f.machine_ids) or 'unknown'}: a cloned virtual machine, or an old "
            f"report of a reinstalled node")
