"""The firewall state the firewall checks judge: a ruleset (:mod:`.model`) with the
mechanisms that produced it, the problems that kept it from being known, and what was
looked at.  :mod:`.running` loads the kernel's ruleset, :mod:`.boot` what the enabled
services load at boot.
"""

from __future__ import annotations

from dataclasses import field

from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.netfilter import model as nf

NFT_TIMEOUT = 10.0
"""Seconds each firewall command (``nft``, ``iptables-save``...) may run."""


@record(frozen=False)
class Mechanism:
    """One firewall mechanism and whether it shapes the state being judged."""

    name: str
    active: bool
    reason: str
    evidence: list[Evidence] = field(default_factory=list)


@record(frozen=False)
class FirewallState:
    """A ruleset with the mechanisms that produced it."""

    ruleset: nf.Ruleset | None
    """``None`` when it could not be determined (see ``problems``)."""
    mechanisms: list[Mechanism] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    running: bool = False
    """The kernel's current ruleset (commands), not the boot configuration."""
    looked: list[Evidence] = field(default_factory=list)
    """What was looked at for the mechanisms that load nothing: a unit file installed but
    not enabled, and (``default`` evidence) where a mechanism that is not installed was
    looked for.  Shown only when no mechanism is active: then it is what decided."""

    def active(self) -> list[str]:
        """Names of the active mechanisms."""
        return [m.name for m in self.mechanisms if m.active]
