"""``faults.nvswitch_sxid``: no NVSwitch logged a fatal SXid (live).

Gathers the kernel log once per scan (:mod:`aiaudit.linux.kmsg.log`).  Decides per NVSwitch:
an SXid event whose first line says ``Fatal`` (the NVSwitch driver's own classification,
printed with every SXid; NVIDIA's SXid documentation: a fatal SXid stops NVLink traffic
through that switch until the fabric is reset) fails at ``count`` events in ``window_s``;
``non_fatal_count`` (off by default) does the same for non-fatal ones.  ``Severity`` and
``Data`` lines of an event are not counted again.
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import CheckContext, CheckSpec, Remediation, Result, hookimpl

FIX = Remediation(
    "Drain the node: after a fatal SXid NVLink traffic through the switch stalls (jobs hang, "
    "Xid 45 on the GPUs).  Reset the fabric (stop jobs, restart nvidia-fabricmanager and "
    "reset the GPUs, or reboot); replace the baseboard on recurrence (NVIDIA SXid "
    "documentation, Fabric Manager user guide).")


def run(ctx: CheckContext) -> Iterator[Result]:
    """Each NVSwitch's fatal (and optionally non-fatal) SXids against the threshold."""
    from aiaudit.linux.kmsg import judge

    klog = judge.gate(ctx)
    if isinstance(klog, Result):
        yield klog
        return
    p = ctx.params
    nonfatal = int(p["non_fatal_count"])

    def label(code: str) -> str | None:
        sev, _, num = code.partition(":")
        if sev == "fatal":
            return f"fatal SXid {num}"
        return f"non-fatal SXid {num}" if nonfatal else None

    def limit(code: str) -> tuple[int, float]:
        c = int(p["count"]) if code.startswith("fatal") else nonfatal
        return c, float(p["window_s"])

    found, _ = judge.hits(klog, "sxid", label, limit)
    yield from judge.results(klog, found, what="fatal SXid",
                             window=float(p["window_s"]),
                             describe=lambda dev: f"NVSwitch {dev}", fix=FIX)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``faults.nvswitch_sxid``."""
    from aiaudit.linux.kmsg.judge import window_schema

    return [CheckSpec(
        id="faults.nvswitch_sxid", title="NVSwitches logged no fatal SXid",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            **window_schema(1, 0, "fatal SXid events of one code"),
            "non_fatal_count": {"type": "integer", "minimum": 0, "maximum": 256,
                                "default": 0, "description": "non-fatal SXid events of one "
                                "code on one switch at which the rule fails (0: not judged)"}}},
        description="Live: 'SXid (PCI:...): N, Fatal|Non-fatal, ...' lines of /dev/kmsg (or a "
                    "--live snapshot's dev/kmsg) per NVSwitch; the Fatal/Non-fatal word is the "
                    "driver's own classification (NVIDIA SXid documentation); offline: not "
                    "applicable.")]
