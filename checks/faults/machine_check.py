"""``faults.machine_check``: the CPUs and memory controllers logged no uncorrected machine
check (live).

Gathers the kernel log once per scan (:mod:`aiaudit.linux.kmsg.log`).  Decides for the node:
uncorrected errors (a decoded ``mce: [Hardware Error]: CPU n: Machine Check ... Bank b:
STATUS`` with the UC bit, bit 61 of MCi_STATUS, set; ``Memory failure: ... recovery
action``; ``Uncorrected hardware memory error``; EDAC ``UE``) fail at ``count`` in
``window_s``.  ``logged_count`` (0: off) judges the ``Machine check events logged``
notices too, which are corrected errors in the common case (rasdaemon or mcelog decode them).
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import CheckContext, CheckSpec, Remediation, Result, hookimpl

FIX = Remediation(
    "Drain the node and decode the errors (`ras-mc-ctl --errors` with rasdaemon, or "
    "`mcelog --client`, the BMC's SEL): an uncorrected memory error names a DIMM to "
    "replace; an uncorrected CPU error, the CPU or board.")

WORDS = {"uncorrected": "uncorrected machine check", "logged": "machine check events logged",
         "corrected": "corrected machine check"}


def run(ctx: CheckContext) -> Iterator[Result]:
    """The node's machine checks against the thresholds."""
    from aiaudit.linux.kmsg import judge

    klog = judge.gate(ctx)
    if isinstance(klog, Result):
        yield klog
        return
    p = ctx.params
    logged = int(p["logged_count"])

    def label(code: str) -> str | None:
        return WORDS[code] if code == "uncorrected" or (code == "logged" and logged) else None

    def limit(code: str) -> tuple[int, float]:
        return (int(p["count"]) if code == "uncorrected" else logged), float(p["window_s"])

    found, _ = judge.hits(klog, "mce", label, limit)
    yield from judge.results(klog, found, what="uncorrected machine check",
                             window=float(p["window_s"]),
                             describe=_describe, fix=FIX)


def _describe(dev: str) -> str:
    if dev.startswith("cpu"):
        return f"CPU {dev[3:]}"
    return f"memory controller {dev[2:]}" if dev.startswith("mc") else "node"


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``faults.machine_check``."""
    from aiaudit.linux.kmsg.judge import window_schema

    return [CheckSpec(
        id="faults.machine_check", title="The node logged no uncorrected machine check",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            **window_schema(1, 0, "uncorrected machine checks"),
            "logged_count": {"type": "integer", "minimum": 0, "maximum": 256, "default": 0,
                             "description": "'Machine check events logged' notices at "
                                            "which the rule fails (0: not judged)"}}},
        description="Live: mce/EDAC/Memory failure lines of /dev/kmsg (or a --live "
                    "snapshot's dev/kmsg); a decoded bank's UC bit (MCi_STATUS bit 61, Intel "
                    "SDM vol. 3B 16.3.2.2 / AMD APM) says uncorrected; offline: not "
                    "applicable.")]
