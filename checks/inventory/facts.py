"""``inventory.facts``: record the node's class facts in the report.

Always passes: it gathers the facts (:func:`aiaudit.linux.inventory.facts.inventory`) and
puts them in the result's ``data`` (``{"facts": {name: value}, "sources": {...},
"unknown": {...}}``), where ``aiaudit fleet`` finds drift between nodes and
``aiaudit baseline --from-fleet`` finds the class's majority values.
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import CheckContext, CheckSpec, Result, Status, hookimpl
from aiaudit.linux.inventory.facts import inventory


def run(ctx: CheckContext) -> Iterator[Result]:
    """Record the facts."""
    inv = inventory(ctx.host)
    known = len(inv.facts)
    note = f"; {len(inv.unknown)} not knowable in this mode" if inv.unknown else ""
    yield Result(Status.PASS, "facts", f"recorded {known} class fact(s){note}",
                 data={"facts": inv.values(),
                       "sources": {f.name: f.source for f in inv.facts},
                       "live": {f.name: f.live for f in inv.facts},
                       "unknown": {u.name: u.reason for u in inv.unknown}})


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``inventory.facts``."""
    return [CheckSpec(
        id="inventory.facts", title="Record the node's class facts", run=run,
        params_schema={"type": "object", "additionalProperties": False, "properties": {}},
        description=(
            "Gathers GPU, PCIe, HCA, memory, CPU, kernel, driver, toolkit and package facts "
            "into the report (result data), for `aiaudit fleet` drift and "
            "`aiaudit baseline --from-fleet`.  Never fails."))]
