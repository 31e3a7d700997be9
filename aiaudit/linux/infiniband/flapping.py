"""Link error counters compared with the previous scan (``--state``): growth is flapping.

The kernel shows each port's PortCounters since the HCA's counters were last cleared
(driver load, reboot, ``perfquery -R``); a value alone says little on a node that has been
up for a year.  What drains a node is growth between two scans: LinkDownedCounter counts
the times the link's training state machine failed and the link went down,
LinkErrorRecoveryCounter the times it retrained after an error (IBA vol. 1, 16.1.3.5), both
are flaps that hang NCCL collectives; SymbolErrorCounter counts bad symbols on the wire
(a marginal cable or transceiver).

The previous values come from the previous scan's result for the same rule and port
(``Result.data["counters"]``, kept in the ``--state`` file's JSON).  A value lower than
before, or a different boot (``/proc/sys/kernel/random/boot_id``), means the counters were
reset: the scan is a new baseline, not a finding.  A counter at its saturation value can no
longer grow: it is reported as saturated.
"""

from __future__ import annotations

from typing import Any, Mapping

from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.infiniband.ports import ERROR_COUNTERS, Port

BOOT_ID = "/proc/sys/kernel/random/boot_id"


@record
class Previous:
    """What the previous scan recorded for one port."""

    counters: Mapping[str, int]
    boot_id: str | None


@record
class Change:
    """One counter of one port compared with the previous scan."""

    name: str
    now: int
    before: int | None
    """``None``: no baseline (first scan, counter new, or counters reset)."""
    saturated: bool

    @property
    def growth(self) -> int:
        """How much the counter grew since the previous scan (0 without a baseline)."""
        return 0 if self.before is None else self.now - self.before


def boot_id(host: Host) -> str | None:
    """The running kernel's boot id (live only)."""
    if not host.live:
        return None
    text = host.try_read_text(BOOT_ID)
    return text.strip()[:64] if text else None


def previous_ports(settings: Mapping[str, Any], rule_id: str) -> dict[str, Previous] | None:
    """Per port subject, what the previous scan's results of ``rule_id`` recorded; ``None``
    when there is no previous scan (``settings["previous"]``, a RunResult, set by
    ``--state`` / ``--changes-since``)."""
    run = settings.get("previous")
    findings = getattr(run, "findings", None)
    if findings is None:
        return None
    out: dict[str, Previous] = {}
    for f in findings:
        if f.rule_id != rule_id:
            continue
        data = f.result.data or {}
        counters = data.get("counters")
        if not isinstance(counters, dict):
            continue
        kept = {k: v for k, v in counters.items()
                if k in ERROR_COUNTERS and isinstance(v, int) and not isinstance(v, bool)
                and v >= 0}
        boot = data.get("boot_id")
        out[f.result.subject] = Previous(kept, boot if isinstance(boot, str) else None)
    return out


def compare(port: Port, before: Previous | None, boot: str | None) -> list[Change]:
    """Each error counter of ``port`` against ``before`` (``None``: no baseline).  A
    different boot id, or any counter lower than before, resets the baseline."""
    now = {k: v for k, v in port.counters if v is not None}
    base: Mapping[str, int] = {}
    if before is not None and (before.boot_id is None or boot is None
                               or before.boot_id == boot):
        base = before.counters
        if any(k in base and now[k] < base[k] for k in now):
            base = {}
    return [Change(k, v, base.get(k), v >= ERROR_COUNTERS[k]) for k, v in now.items()]
