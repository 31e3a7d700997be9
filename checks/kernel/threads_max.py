"""``kernel.threads_max``: the thread limit is not lowered below what the kernel gives this RAM.

The kernel sizes ``kernel.threads-max`` at boot from RAM (kernel/fork.c ``set_max_threads``:
as many threads as fit their stacks in 1/8 of RAM, :func:`aiaudit.linux.sysctl.ram.
kernel_threads_max`); a sysctl.d line copied from an old guide that lowers it makes
DataLoader workers and their threads fail with ``EAGAIN`` in fork/clone.

Gather: ``/proc/sys/kernel/threads-max``, ``MemTotal`` of ``/proc/meminfo`` and the page size
(:mod:`aiaudit.linux.sysctl.ram`).  Decide: the runtime value must be at least 90% of the
kernel's value for this RAM (``MemTotal`` is a little below the total RAM the kernel uses)
and at least ``min_value``.  RAM is live state, so offline the rule skips.
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
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.parsing import to_int
from aiaudit.linux.sysctl import ram

SUBJECT = "kernel.threads-max"
THREADS_PROC = "/proc/sys/kernel/threads-max"

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "properties": {
        "min_value": {"type": "integer", "minimum": 0, "default": 0,
                      "description": "also require at least this (0: only the kernel's "
                                     "RAM-derived value)"}}}


def gather(host: Host) -> tuple[int, int, tuple[Evidence, ...]]:
    """(threads-max now, the kernel's value for this RAM, evidence); HostError,
    ParseError or ValueError when a file is unreadable."""
    mem_kb, mem_line = ram.mem_total_kb(host.read_text(ram.MEMINFO))
    ps, how = ram.page_size(host.try_read_text(ram.PMD))
    have = to_int(host.read_text(THREADS_PROC).strip(), what="threads-max",
                  source=THREADS_PROC, line=1)
    return have, ram.kernel_threads_max(mem_kb, ps), (
        Evidence.runtime(THREADS_PROC, str(have)),
        Evidence.runtime(ram.MEMINFO, mem_line),
        Evidence.default("page size", f"{ps} ({how})"))


def floor(default: int, min_value: int) -> int:
    """The lowest acceptable value: 90% of the kernel's (MemTotal is a little below
    totalram_pages, so the default itself passes) and at least ``min_value``."""
    return max(int(default * 0.9), int(min_value))


def run(ctx: CheckContext) -> Iterator[Result]:
    """threads-max not lowered below the kernel's RAM-derived value (nor below a floor)."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield Result(Status.SKIP, SUBJECT, "the kernel sizes threads-max from RAM, which is "
                     "live state")
        return
    try:
        have, default, ev = gather(host)
    except (HostError, ParseError, ValueError) as exc:
        yield Result(Status.ERROR, SUBJECT, f"cannot read threads-max or RAM: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    want = floor(default, p["min_value"])
    data = {"runtime": have, "kernel_default": default}
    if have < want:
        yield Result(Status.FAIL, SUBJECT, f"kernel.threads-max is {have}, below {want} (the "
                     f"kernel's own value for this RAM is about {default}): DataLoader "
                     "workers and their threads hit EAGAIN in fork/clone",
                     expected=f">= {want}", actual=str(have), aspect=Aspect.RUNTIME,
                     evidence=ev, data=data, remediation=Remediation(
                         "Remove the sysctl.d line that lowers kernel.threads-max (the "
                         "kernel sizes it from RAM), then `sysctl -w "
                         f"kernel.threads-max={default}`."))
    else:
        yield Result(Status.PASS, SUBJECT, f"kernel.threads-max is {have} (kernel value for "
                     f"this RAM about {default})", expected=f">= {want}", actual=str(have),
                     aspect=Aspect.RUNTIME, evidence=ev, data=data)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``kernel.threads_max``."""
    return [CheckSpec(
        id="kernel.threads_max", title="The thread limit is not lowered below the RAM-based "
        "default", run=run, modes=("live",), params_schema=PARAMS_SCHEMA,
        description="Live: /proc/sys/kernel/threads-max against kernel/fork.c's value for "
                    "MemTotal (90% of it, since MemTotal is below total RAM).")]
