"""``faults.nvrm_errors``: the NVIDIA driver logged no GPU fallen off the bus and no GPU that
failed to initialise (live).

Gathers the kernel log once per scan (:mod:`aiaudit.linux.kmsg.log`).  Decides per GPU: NVRM
messages other than Xid that the catalogue lists (``checks/data/xid_catalogue.json``
``nvrm``: ``GPU has fallen off the bus``, ``RmInitAdapter failed``...) fail at ``count`` in
``window_s``.  A GPU off the bus logs this line besides Xid 79, and older drivers log only
this line; a GPU that failed to initialise is missing from every job.
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import CheckContext, CheckSpec, Remediation, Result, hookimpl

FIX = Remediation(
    "Drain the node.  A GPU off the bus needs a reboot (NVIDIA: RESTART_BM), then a look at "
    "its seating, power and PCIe link (`lspci -vv`, AER messages); a GPU that failed to "
    "initialise: reset or reboot, then check the driver and firmware versions.")


def run(ctx: CheckContext) -> Iterator[Result]:
    """Each GPU's NVRM errors against the threshold."""
    from aiaudit.linux.kmsg import judge

    klog = judge.gate(ctx)
    if isinstance(klog, Result):
        yield klog
        return
    from aiaudit.linux.kmsg import catalogue as cat

    p = ctx.params
    wanted = set(p["errors"])
    said = {name: match for name, match, _m, _a in cat.shipped().nvrm}

    def label(code: str) -> str | None:
        return f"NVRM '{said.get(code, code)}'" if code in wanted else None

    found, _ = judge.hits(klog, "nvrm", label,
                          lambda _c: (int(p["count"]), float(p["window_s"])))
    yield from judge.results(klog, found, what="GPU off the bus or failed to initialise",
                             window=float(p["window_s"]),
                             describe=lambda dev: f"GPU {dev}" if dev != "-" else "GPU",
                             fix=FIX)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``faults.nvrm_errors``."""
    from aiaudit.linux.kmsg.judge import window_schema

    return [CheckSpec(
        id="faults.nvrm_errors",
        title="The NVIDIA driver logged no GPU off the bus or failed to initialise",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "errors": {"type": "array", "items": {"enum": ["off_bus", "init_failed"]},
                       "default": ["off_bus", "init_failed"],
                       "description": "NVRM errors judged (names of the catalogue's nvrm "
                                      "patterns)"},
            **window_schema(1, 0, "NVRM errors of one kind")}},
        description="Live: NVRM lines of /dev/kmsg (or a --live snapshot's dev/kmsg) that "
                    "match the catalogue's nvrm patterns (checks/data/xid_catalogue.json: "
                    "'has fallen off the bus', 'RmInitAdapter failed'), per GPU; offline: not "
                    "applicable.")]
