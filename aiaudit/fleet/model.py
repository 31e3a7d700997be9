"""Frozen results of a fleet aggregation; every renderer reads only these."""

from __future__ import annotations

from aiaudit.core.startup.records import record
from aiaudit.fleet.extract import Group


@record
class RuleRow:
    """One rule over the nodes of one group.

    A node's status for a rule is its worst result over the rule's subjects (fail, error,
    waived, pass, skip, in that order).
    """

    rule_id: str
    severity: str
    title: str
    counts: tuple[tuple[str, int], ...]
    """``(status, number of nodes)`` for pass, fail, error, skip, waived."""
    failing: tuple[str, ...]
    """Host names of the nodes that fail it (sorted)."""
    erroring: tuple[str, ...]
    """Host names of the nodes where it could not be evaluated."""

    def count(self, status: str) -> int:
        """Nodes with this status for the rule."""
        return dict(self.counts).get(status, 0)


@record
class Column:
    """Nodes with the same status for every rule of their group (one matrix column)."""

    hosts: tuple[str, ...]
    statuses: tuple[str, ...]
    """Per rule of the group, in :attr:`GroupView.rules` order; ``""`` when not reported."""


@record
class GroupView:
    """The nodes that ran one aiaudit version and one ruleset."""

    group: Group
    hosts: tuple[str, ...]
    rules: tuple[RuleRow, ...]
    columns: tuple[Column, ...]
    """Nodes grouped by identical status vectors, largest group first."""


@record
class ValueShare:
    """One value of a drift distribution."""

    value: str
    hosts: tuple[str, ...]


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
    outliers: tuple[str, ...]
    """Nodes whose value is not the majority's (empty without a majority)."""


@record
class IdentityFinding:
    """Two reports that claim one identity: a cloned image or a renamed node."""

    kind: str
    """``duplicate-machine-id`` (one id, several host names: an image cloned without
    resetting /etc/machine-id) or ``duplicate-hostname`` (one name, several ids)."""
    severity: str
    key: str
    """The shared machine id or host name."""
    hosts: tuple[str, ...]
    machine_ids: tuple[str, ...]


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

    groups: tuple[GroupView, ...]
    drift: tuple[Drift, ...]
    facts: tuple[Drift, ...]
    identity: tuple[IdentityFinding, ...]
    problems: tuple[str, ...]
    """One line per unusable input (file and position first)."""
    notices: tuple[str, ...]
    """Not problems: a node reported twice (the newest report is used), and such."""
    reports: int
    """Reports (or event runs) aggregated."""
    since: Since | None = None

    @property
    def nodes(self) -> int:
        """Distinct nodes (host name + machine id)."""
        return sum(len(g.hosts) for g in self.groups)
