"""Write a node class as a reviewable ruleset (YAML text with comments)."""

from __future__ import annotations

import re
from typing import Any, Iterable

import yaml

from aiaudit.core.startup.records import record
from aiaudit.linux.inventory.model import Fact, Unknown

_SAFE_ID = re.compile(r"[^A-Z0-9]+")


@record
class Capture:
    """Where the class came from, for the header and every rule's params."""

    name: str
    """The class (ruleset) name: ``hgx-h100``."""
    extends: str
    source: str
    """``host gpu07 (machine id ...), live, 2026-12-02T10:00:00Z`` or the fleet."""
    captured_from: str
    """Short label for each rule (``gpu07`` or ``majority of 32 nodes``)."""


def rule_id(fact: str) -> str:
    """``gpu.pcie.width`` -> ``CLASS-GPU-PCIE-WIDTH``."""
    return "CLASS-" + _SAFE_ID.sub("-", fact.upper()).strip("-")


def _rule(f: Fact, cap: Capture) -> dict[str, Any]:
    params: dict[str, Any] = {"fact": f.name, "expected": f.value}
    if f.compare != "equal":
        params["compare"] = f.compare
    if f.tolerance:
        params["tolerance"] = f.tolerance
    params.update(live=f.live, source=f.source, captured_from=cap.captured_from)
    return {"id": rule_id(f.name), "check": "inventory.fact", "severity": f.severity,
            "title": f"Ensure the node matches its class: {f.title}",
            "params": params, "tags": ["class", "inventory"]}


def _block(rule: dict[str, Any]) -> str:
    text = yaml.safe_dump([rule], sort_keys=False, default_flow_style=False,
                          allow_unicode=False, width=100)
    return "".join("  " + line + "\n" for line in text.splitlines())


def render(facts: Iterable[Fact], unknown: Iterable[Unknown], cap: Capture,
           notes: Iterable[str] = ()) -> str:
    """The class ruleset: a header saying where it came from, one rule per fact (each
    with a comment naming where the value was read), and the facts left out, as comments."""
    lines = [
        f"# Node class {cap.name}, written by `aiaudit baseline` from",
        f"#   {cap.source}.",
        "# Review it: every rule pins one fact of the known-good node; edit a severity, a",
        "# tolerance or a value, delete a rule that does not define the class.  Scan a node",
        f"# against it with `aiaudit scan --ruleset {cap.name}.yaml`.",
    ]
    left = list(unknown)
    if left:
        lines.append("# Not captured:")
        lines += [f"#   {u.name}: {u.reason}" for u in left]
    lines += [f"# {n}" for n in notes]
    head = {"ruleset": cap.name, "version": "1", "extends": cap.extends,
            "description": f"Node class {cap.name}: the {cap.extends} rules, and this "
                           f"class's hardware and stack as captured from "
                           f"{cap.captured_from}."}
    out = "\n".join(lines) + "\n" + yaml.safe_dump(head, sort_keys=False, width=100)
    out += "rules:\n"
    body = []
    for f in facts:
        body.append(f"  # read at {f.source} ({'runtime' if f.live else 'files'})\n"
                    + _block(_rule(f, cap)))
    return out + ("\n".join(body) if body else "  []\n")
