"""Frozen results of a fleet aggregation; every renderer reads only these.

Nodes are counted by identity, never by name: :attr:`Fleet.nodes` lists each node once
(its machine id and DMI product UUID; :mod:`aiaudit.fleet.identity`) and everything else
refers to nodes by their index there.  Host names are labels: two nodes may share one, so a
count is always ``len`` of node indices, and a host list (for Slurm) is the set of their
names.  Text, JSON, HTML, Prometheus and the gate all count the same way.
"""

from __future__ import annotations

from typing import Iterable

from aiaudit.core.startup.records import record
from aiaudit.fleet.extract import Group


@record
class Node:
    """One node: the reports that claim one identity."""

    hostname: str
    """Its label: the host name of its newest report."""
    machine_id: str | None
    product_uuid: str | None
    hostnames: tuple[str, ...]
    """Every host name its reports gave (sorted; more than one: renamed, or a replay)."""
    reports: int
    """Distinct reports (scans) that claim it; more than one is a :class:`Conflict`."""


@record
class RuleRow:
    """One rule over the nodes of one group.

    A node's status for a rule is its worst result over the rule's subjects (fail, error,
    waived, pass, skip, in that order), and over its reports when several claim it.
    """

    rule_id: str
    severity: str
    """The ruleset's severity (see :mod:`aiaudit.fleet.authority`)."""
    title: str
    counts: tuple[tuple[str, int], ...]
    """``(status, number of nodes)`` for pass, fail, error, skip, waived."""
    failing: tuple[int, ...]
    """The nodes that fail it (indices into :attr:`Fleet.nodes`, in label order)."""
    erroring: tuple[int, ...]
    """The nodes where it could not be evaluated."""

    def count(self, status: str) -> int:
        """Nodes with this status for the rule."""
        return dict(self.counts).get(status, 0)


@record
class Column:
    """Nodes with the same status for every rule of their group (one matrix column)."""

    nodes: tuple[int, ...]
    statuses: tuple[str, ...]
    """Per rule of the group, in :attr:`GroupView.rules` order; ``""`` when not reported."""


@record
class GroupView:
    """The nodes that ran one aiaudit version and one ruleset."""

    group: Group
    nodes: tuple[int, ...]
    rules: tuple[RuleRow, ...]
    columns: tuple[Column, ...]
    """Nodes grouped by identical status vectors, largest group first."""
    judged_by: str = ""
    """What gave the rules their severities (:class:`aiaudit.fleet.authority.Authority`)."""


@record
class ValueShare:
    """One value of a drift distribution."""

    value: str
    nodes: tuple[int, ...]


@record
class Drift:
    """Nodes that disagree on a value: a rule's ``actual`` for a subject, or a host fact."""

    group: str
    """The group's label."""
    rule_id: str
    """The rule, or ``host`` for a host fact."""
    subject: str
    """The rule's subject, or the fact's name (``kernel``, ``os``, ``image_id``, ``mode``)."""
    values: tuple[ValueShare, ...]
    """Most common first."""
    majority: str | None
    """The value of more than half of the nodes, if one has it."""
    outliers: tuple[int, ...]
    """Nodes whose value is not the majority's (empty without a majority)."""


@record
class IdentityFinding:
    """Distinct nodes that share what should name one machine."""

    kind: str
    """``duplicate-machine-id`` (an image cloned without emptying /etc/machine-id: product
    UUIDs differ, or are unknown), ``duplicate-hostname`` (one name, several machines) or
    ``duplicate-product-uuid`` (a cloned virtual machine, or a reinstalled node whose old
    report is still read)."""
    severity: str
    key: str
    """The shared machine id, host name or product UUID."""
    nodes: tuple[int, ...]
    machine_ids: tuple[str, ...]
    product_uuids: tuple[str, ...] = ()


@record
class ReportRef:
    """Where one report came from, as a conflict lists it."""

    origin: str
    hostname: str
    started: str
    run_id: str


@record
class Conflict:
    """Several different reports (scans) claim one node: a node scanned twice, renamed, or
    a report replayed under its identity.  None replaces another: the node's status for a
    rule is the worst over all of them, and each is listed."""

    node: int
    reports: tuple[ReportRef, ...]
    """Newest first."""


@record
class NodeChange:
    """How one node moved since the previous fleet report."""

    host: str
    worse: tuple[str, ...]
    """Rules it fails now but did not before."""
    better: tuple[str, ...]
    """Rules it failed before but does not now."""


@record
class Since:
    """The comparison with a previous fleet report (``--since``)."""

    origin: str
    changes: tuple[NodeChange, ...]
    new_hosts: tuple[str, ...]
    gone_hosts: tuple[str, ...]


@record
class Fleet:
    """Everything ``aiaudit fleet`` found."""

    nodes: tuple[Node, ...]
    """Every node once, in label order (host name, then ids)."""
    groups: tuple[GroupView, ...]
    drift: tuple[Drift, ...]
    facts: tuple[Drift, ...]
    identity: tuple[IdentityFinding, ...]
    problems: tuple[str, ...]
    """One line per unusable input (file and position first), at most
    :data:`~aiaudit.fleet.bounds.MAX_PROBLEMS`."""
    notices: tuple[str, ...]
    """Not problems: a report read twice, a ``--ruleset`` no report uses, and such."""
    reports: int
    """Reports (or event runs) aggregated."""
    conflicts: tuple[Conflict, ...] = ()
    since: Since | None = None
    problems_not_kept: int = 0
    """Problem lines past :data:`~aiaudit.fleet.bounds.MAX_PROBLEMS` (counted only)."""

    @property
    def node_count(self) -> int:
        """Distinct nodes (by machine id and product UUID; :mod:`aiaudit.fleet.identity`)."""
        return len(self.nodes)

    @property
    def problem_count(self) -> int:
        """Problems, kept or not."""
        return len(self.problems) + self.problems_not_kept

    def names(self, nodes: Iterable[int]) -> list[str]:
        """The host names (labels) of these nodes."""
        return [self.nodes[i].hostname for i in nodes]
