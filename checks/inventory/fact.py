"""``inventory.fact``: the node has the value its class was captured with.

A node class is a ruleset written by ``aiaudit baseline`` from a known-good node: one rule
per fact (GPU count and models, each GPU's PCIe width and generation, VBIOS, HCA rates and
firmware, memory, CPUs, kernel, driver, toolkit, packages), each with the captured value
and where it was read.  This check gathers the same facts on the scanned node
(:func:`aiaudit.linux.inventory.facts.inventory`, once per run) and compares them
(:func:`aiaudit.linux.inventory.compare.compare`): a difference fails with both values and
both places.  A live-only fact on an offline scan is a skip with the reason; a fact the
node should have but does not show fails.
"""

from __future__ import annotations

from typing import Any, Iterator

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
from aiaudit.linux.inventory.compare import compare
from aiaudit.linux.inventory.facts import inventory
from aiaudit.linux.inventory.model import COMPARES

_FIXES = (
    ("gpu.pcie", "Reseat the GPU or its riser/cable, check the slot's BIOS link settings, "
                 "and compare `lspci -vv` LnkSta with LnkCap."),
    ("gpu.", "Check `dmesg` for Xid errors and the GPU's seating; update the VBIOS/driver "
             "to the class's version."),
    ("hca.", "Check the cable and switch port (`ibstat`), and update the adapter firmware "
             "to the class's version (`mlxfwmanager`)."),
    ("memory.", "Check for failed or missing DIMMs (`dmidecode -t memory`, the BMC's SEL) "
                "and the huge-page settings."),
    ("packages", "Install the class's versions (or pin them in the image)."),
)


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


def _fix(name: str) -> Remediation:
    text = next((t for prefix, t in _FIXES if name.startswith(prefix)),
                "Bring the node to its class's configuration.")
    return Remediation(text + "  If the class itself changed, capture it again with "
                       "`aiaudit baseline`.")


def run(ctx: CheckContext) -> Iterator[Result]:
    """The node's fact against the captured one."""
    host, p = ctx.host, ctx.params
    name, expected = p["fact"], p["expected"]
    was = Evidence.default(f"class value, read at {p['source']}"
                           + (f" on {p['captured_from']}" if p["captured_from"] else ""),
                           _show(expected))
    inv = inventory(host)
    fact = inv.get(name)
    if fact is None:
        reasons = [u.reason for u in inv.unknown
                   if u.name == name or name.startswith(u.name.split("*")[0].rstrip("."))]
        if p["live"] and not host.live:
            yield Result(Status.SKIP, name, f"{name} is live state: "
                         f"{reasons[0] if reasons else 'an offline scan cannot read it'}")
            return
        yield Result(Status.FAIL, name, f"{name}: the class has {_show(expected)}; this node "
                     f"shows none ({p['source']} not found or empty)",
                     expected=_show(expected), actual="(none)", aspect=_aspect(p["live"]),
                     evidence=(was, _evidence(p["source"], None, p["live"])),
                     remediation=_fix(name))
        return
    v = compare(p["compare"], expected, fact.value, p["tolerance"])
    status = Status.PASS if v.same else Status.FAIL
    what = "; ".join(v.differences) if v.differences else f"{_show(fact.value)}, as the class"
    yield Result(status, name, f"{fact.title}: {what}", expected=_show(expected),
                 actual=_show(fact.value), aspect=_aspect(fact.live),
                 evidence=(was, _evidence(fact.source, _show(fact.value), fact.live)),
                 data={"expected": expected, "actual": fact.value, "notes": list(v.notes)},
                 remediation=None if v.same else _fix(name))


def _aspect(live: bool) -> Aspect:
    return Aspect.RUNTIME if live else Aspect.PERSISTED


def _evidence(source: str, value: str | None, live: bool) -> Evidence:
    if live:
        return Evidence.runtime(source, value)
    return Evidence.file(source, value=value) if source.startswith("/") else \
        Evidence.default(source, value)


SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["fact", "expected"],
    "additionalProperties": False,
    "properties": {
        "fact": {"type": "string", "minLength": 1, "maxLength": 128},
        "expected": {"type": ["string", "number", "object"]},
        "compare": {"enum": list(COMPARES), "default": "equal"},
        "tolerance": {"type": "number", "minimum": 0, "maximum": 1, "default": 0},
        "live": {"type": "boolean", "default": True,
                 "description": "the fact is live state (skipped offline)"},
        "source": {"type": "string", "default": ""},
        "captured_from": {"type": "string", "default": ""},
    },
}


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``inventory.fact``."""
    return [CheckSpec(
        id="inventory.fact", title="The node has its class's value of a fact",
        run=run, params_schema=SCHEMA,
        description=(
            "Gathers the node's class facts (GPUs, PCIe links, VBIOS, HCAs, memory, CPUs, "
            "kernel, driver, toolkit, packages) from /proc, /sys and the package databases "
            "and compares one with the value `aiaudit baseline` captured on a known-good "
            "node: equal, within a tolerance, per device, or every captured package "
            "present at its version.  Live facts are skipped offline."))]
