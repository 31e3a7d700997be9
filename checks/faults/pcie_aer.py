"""``faults.pcie_aer``: no PCIe device on the path of a GPU, HCA or NVSwitch logged AER
errors of the rule's severities, at or over its threshold (live).

Gathers the kernel log once per scan (:mod:`aiaudit.linux.kmsg.log`): the ``PCIe Bus
Error: severity=...`` line of each AER error (``drivers/pci/pcie/aer.c``), by the device
that logged it.  Names the device from sysfs (:mod:`aiaudit.linux.kmsg.devices`: a GPU, an
HCA, an NVSwitch, or a PCIe port with one of them below); with ``scope: accelerators`` only
those count (a device sysfs cannot name, in a snapshot without ``sys``, counts and says
so).  Uncorrected errors (fatal: the link is down until reset; non-fatal: a transaction was
lost) fail at one; corrected ones only past a rate (a healthy link corrects a few).
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import CheckContext, CheckSpec, Remediation, Result, hookimpl

FIX = Remediation(
    "Drain the node and look at the device's link: `lspci -vvv -s <bdf>` (LnkSta, "
    "UESta/CESta), reseat or replace the GPU/HCA, riser or cable; a port that keeps "
    "logging uncorrected errors after that is a board fault.  Corrected errors at a high "
    "rate are a degrading link (signal integrity).")

SEVERITY_WORDS = {"fatal": "fatal AER", "nonfatal": "non-fatal AER", "corrected": "corrected AER"}


def run(ctx: CheckContext) -> Iterator[Result]:
    """Each device's AER errors of the selected severities against the threshold."""
    from aiaudit.linux.kmsg import judge

    klog = judge.gate(ctx)
    if isinstance(klog, Result):
        yield klog
        return
    from aiaudit.linux.kmsg import devices

    p = ctx.params
    wanted = set(p["severities"])
    host = ctx.host
    names: dict[str, tuple[str, str]] = {}

    def name(dev: str) -> tuple[str, str]:
        if dev not in names:
            names[dev] = devices.describe(host, dev)
        return names[dev]

    found, _ = judge.hits(klog, "aer", lambda c: SEVERITY_WORDS[c] if c in wanted else None,
                          lambda _c: (int(p["count"]), float(p["window_s"])))
    if p["scope"] == "accelerators":
        found = [h for h in found
                 if name(h.device)[0].split(":")[-1] in (*devices.ACCELERATOR_ROLES, "unknown")]

    def describe(dev: str) -> str:
        r, words = name(dev)
        return f"{words} (device class unknown: no sysfs)" if r == "unknown" else words

    yield from judge.results(klog, found, what="AER error of "
                             + "/".join(sorted(wanted)) + " severity on "
                             + ("an accelerator's path" if p["scope"] == "accelerators"
                                else "any device"),
                             window=float(p["window_s"]), describe=describe, fix=FIX)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``faults.pcie_aer``."""
    from aiaudit.linux.kmsg.judge import window_schema

    return [CheckSpec(
        id="faults.pcie_aer", title="PCIe devices of GPUs, HCAs and NVSwitches logged no AER "
                                    "errors of the rule's severities",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "severities": {"type": "array", "minItems": 1,
                           "items": {"enum": ["fatal", "nonfatal", "corrected"]},
                           "default": ["fatal", "nonfatal"],
                           "description": "AER severities this rule counts"},
            "scope": {"enum": ["accelerators", "all"], "default": "accelerators",
                      "description": "accelerators: GPUs, HCAs, NVSwitches and the PCIe "
                                     "ports above them (sysfs); all: any device"},
            **window_schema(1, 0, "AER errors of one severity")}},
        description="Live: 'PCIe Bus Error: severity=...' lines of /dev/kmsg (or a --live "
                    "snapshot's dev/kmsg) per device, named from /sys/bus/pci/devices "
                    "(class, vendor, devices below a port); offline: not applicable.")]
