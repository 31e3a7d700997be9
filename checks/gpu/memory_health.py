"""``gpu.memory_health``: each GPU's memory error counts within thresholds, one result per
GPU (issue 28, "Memory health with thresholds").

Gathers ``nvidia-smi -q -x`` (run once per scan and shared with every ``gpu.*`` rule, only
when scanning the real ``/`` live, with a timeout; never from a scanned root) through
:mod:`aiaudit.linux.gpu.nvsmi`, and decides with :func:`aiaudit.linux.gpu.health.
memory_health`: uncorrectable ECC errors since the last reset (with MIG, the GPU's and its
instances' counts) and over the GPU's life, retired pages against the retirement limit,
memory banks without a spare row, each against a param; a row remapping failure and SRAM
Threshold Exceeded always fail.  The defaults are NVIDIA's (DCGM's memory health watch and
``DCGM_LIMIT_MAX_RETIRED_PAGES``, the GPU Memory Error Management guide's RMA policy); see
:data:`aiaudit.linux.gpu.health.THRESHOLD_SOURCES`.  Pending retirements and remaps are
``gpu.smi_health`` ``memory_errors``.  Counts the GPU reports as N/A are "not reported"
(skip, with the reason), never a pass.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

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
from aiaudit.linux.gpu import driver, health

FIX = Remediation(
    "Drain the node and reset the GPU (`nvidia-smi -r -i N`, or reboot) after uncorrectable "
    "errors; run NVIDIA's field diagnostic and request an RMA for a GPU at the retired-page "
    "limit, with a row remapping failure or with SRAM Threshold Exceeded.")

LIMIT = {"type": ["integer", "null"], "minimum": 0}


def limits(p: Mapping[str, Any]) -> health.MemoryLimits:
    """The thresholds of a rule's params."""
    return health.MemoryLimits(
        max_volatile_uncorrectable=p["max_volatile_uncorrectable"],
        max_aggregate_uncorrectable=p["max_aggregate_uncorrectable"],
        retired_pages_limit=p["retired_pages_limit"],
        max_banks_without_spare_rows=p["max_banks_without_spare_rows"])


def run(ctx: CheckContext) -> Iterator[Result]:
    """One result per GPU from ``nvidia-smi -q -x`` (live real root only)."""
    host, p = ctx.host, ctx.params
    blocked = driver.gate(host, p, "gpu memory health")
    if blocked:
        yield blocked
        return
    from aiaudit.linux.gpu import nvsmi  # nvidia-smi's reader: only past the GPU gate

    shown = " ".join(nvsmi.SMI_ARGV)
    if not host.allow_commands:
        yield Result(Status.SKIP, "nvidia-smi", "nvidia-smi is run only when scanning the real "
                     "/ live; it is never run from a scanned root")
        return
    got = nvsmi.query(host, float(p["timeout"]))
    if isinstance(got, str):
        yield Result(Status.ERROR, "nvidia-smi", got, evidence=(Evidence.command(shown),))
        return
    if not got.gpus:
        yield Result(Status.ERROR, "nvidia-smi", "nvidia-smi -q -x listed no GPU")
        return
    lim = limits(p)
    for g in got.gpus:
        v = health.memory_health(g, lim)
        yield Result(v.status, f"GPU {g.bus_id}", f"{g.name}: {v.message}",
                     expected=v.expected, actual=v.actual, aspect=Aspect.RUNTIME,
                     evidence=(Evidence.command(shown, f"driver {got.driver_version}, "
                                                f"{got.schema or 'no DOCTYPE'}"),),
                     data={"gpu": g.name, "driver": got.driver_version, **v.data},
                     remediation=FIX if v.status is Status.FAIL else None)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``gpu.memory_health``."""
    return [CheckSpec(
        id="gpu.memory_health", title="GPU memory error counts are within thresholds",
        run=run, modes=("live",),
        params_schema=driver.schema({
            "max_volatile_uncorrectable": LIMIT | {
                "default": 0, "description": "most uncorrectable ECC errors since the last "
                "GPU reset (GPU and MIG instances); NVIDIA's DCGM fails on any"},
            "max_aggregate_uncorrectable": LIMIT | {
                "default": None, "description": "most uncorrectable ECC errors over the "
                "GPU's life (InfoROM); null: reported, not judged (NVIDIA sets no limit)"},
            "retired_pages_limit": LIMIT | {
                "minimum": 1, "default": health.RETIRED_PAGES_LIMIT,
                "description": "fail when single- plus double-bit retired pages reach it "
                "(DCGM_LIMIT_MAX_RETIRED_PAGES 63; the driver retires at most 64 pages)"},
            "max_banks_without_spare_rows": LIMIT | {
                "default": None, "description": "most memory banks with no spare row left "
                "(row_remapper_histogram_none); null: reported, not judged"},
            "timeout": {"type": "number", "minimum": 1, "maximum": 60, "default": 15}}),
        description="Live on the real / only: nvidia-smi -q -x (timeout, run once per "
                    "scan); per GPU, uncorrectable ECC errors since the last reset (MIG: "
                    "with the instances' counts) and over the GPU's life, retired pages "
                    "and banks without spare rows against the params; a row remapping "
                    "failure or SRAM Threshold Exceeded fails; N/A counts are 'not "
                    "reported', never a pass.  Sources of the default thresholds: "
                    + health.THRESHOLD_SOURCES + ".")]
