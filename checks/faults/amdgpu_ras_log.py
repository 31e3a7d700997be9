"""``faults.amdgpu_ras_log``: no AMD GPU logged uncorrectable (or deferred) RAS errors in the
kernel log (live).

Gathers the kernel log once per scan (:mod:`aiaudit.linux.kmsg.log`): amdgpu's ``N
uncorrectable|deferred|correctable hardware errors detected in BLOCK block`` messages
(``amdgpu_ras.c``; the newer ``N new ...`` form; ``... in total in ...`` repeats a total
and ``no uncorrectable ...`` is the all-clear, neither counted).  Decides per GPU: messages
reporting uncorrectable (and, with ``count_deferred``, deferred) errors fail at ``count``
in ``window_s``.  The log keeps what the sysfs counters lose at a driver reload or GPU
reset; ``amdgpu.ras_errors`` reads the counters themselves.
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import CheckContext, CheckSpec, Remediation, Result, hookimpl

FIX = Remediation(
    "Drain the node and look at the GPU's RAS state (`amd-smi metric --ecc --ecc-blocks`, "
    "`amd-smi bad-pages`); after an uncorrectable error the driver resets the GPU, and a GPU "
    "that keeps logging them is replaced.")


def run(ctx: CheckContext) -> Iterator[Result]:
    """Each AMD GPU's uncorrectable RAS messages against the threshold."""
    from aiaudit.linux.kmsg import judge

    klog = judge.gate(ctx)
    if isinstance(klog, Result):
        yield klog
        return
    p = ctx.params
    kinds = {"uncorrectable", "deferred"} if p["count_deferred"] else {"uncorrectable"}

    def label(code: str) -> str | None:
        kind, _, block = code.partition(":")
        return f"messages of {kind} {block} errors" if kind in kinds else None

    found, _ = judge.hits(klog, "amdgpu", label,
                          lambda _c: (int(p["count"]), float(p["window_s"])))
    yield from judge.results(klog, found, what="uncorrectable amdgpu RAS error",
                             window=float(p["window_s"]),
                             describe=lambda dev: f"GPU {dev}", fix=FIX)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``faults.amdgpu_ras_log``."""
    from aiaudit.linux.kmsg.judge import window_schema

    return [CheckSpec(
        id="faults.amdgpu_ras_log", title="AMD GPUs logged no uncorrectable RAS errors",
        run=run, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            **window_schema(1, 0, "messages reporting uncorrectable errors"),
            "count_deferred": {"type": "boolean", "default": True,
                               "description": "count deferred (poisoned) errors as "
                                              "uncorrectable (MI300 reports them so)"}}},
        description="Live: amdgpu 'hardware errors detected in <block> block' lines of "
                    "/dev/kmsg (or a --live snapshot's dev/kmsg) per GPU; offline: not "
                    "applicable.")]
