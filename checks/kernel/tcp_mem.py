"""``kernel.tcp_mem``: ``net.ipv4.tcp_mem`` judged against the host's RAM.

``tcp_mem`` is three numbers in *pages* (Documentation/networking/ip-sysctl.rst: min,
pressure, max): above ``max`` TCP refuses socket memory and drops.  The kernel sizes it at
boot from free memory (net/ipv4/tcp.c ``tcp_init_mem``: ``limit = nr_free_buffer_pages() /
16``, min = 3/4 of that, pressure = limit, max = 2 x min, so max is about 9% of RAM).  A
fixed value copied from a tuning guide for a small host leaves a 1 TiB training node a
fraction of a percent; one above RAM lets TCP buffers push the node into OOM.

Gather: the runtime value (``/proc/sys/net/ipv4/tcp_mem``), ``MemTotal`` and the page size
(:mod:`aiaudit.linux.sysctl.ram`), and the persisted value systemd-sysctl writes at boot
(:mod:`aiaudit.linux.sysctl.resolved`).  Decide (:func:`judge`): ``min <= pressure <= max``
and ``max`` between ``min_fraction`` and ``max_fraction`` of RAM, for the runtime value and
then the persisted one.  RAM is live state, so offline the rule skips.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl import ram
from aiaudit.linux.sysctl.dropin import DROPIN
from aiaudit.linux.sysctl.resolved import resolved

KEY = "net.ipv4.tcp_mem"
PROC = "/proc/sys/net/ipv4/tcp_mem"

PARAMS_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "properties": {
        "min_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1,
                         "default": 0.03},
        "max_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1,
                         "default": 0.5}}}


# ------------------------------------------------------------------ gather
@record
class Sizing:
    """The runtime tcp_mem and what it is judged against."""

    runtime: str
    fields: list[int]
    ram_pages: int
    page_size: int
    evidence: tuple[Evidence, ...]
    """The runtime value, MemTotal and the page size."""


def _fields(text: str) -> list[int]:
    parts = text.split()
    if not all(re.fullmatch(r"\d{1,19}", p) for p in parts):
        raise ParseError(f"not three page counts: {text.strip()[:60]!r}")
    return [int(p) for p in parts]


def gather(host: Host) -> Sizing:
    """Runtime tcp_mem, RAM in pages and the page size (HostError, ParseError)."""
    mem_kb, mem_line = ram.mem_total_kb(host.read_text(ram.MEMINFO))
    ps, how = ram.page_size(host.try_read_text(ram.PMD))
    runtime = host.read_text(PROC).strip()
    return Sizing(runtime, _fields(runtime), mem_kb * 1024 // ps, ps, (
        Evidence.runtime(PROC, runtime), Evidence.runtime(ram.MEMINFO, mem_line),
        Evidence.default("page size", f"{ps} ({how})")))


# ------------------------------------------------------------------ decide
def judge(fields: list[int], ram_pages: int, lo: float, hi: float) -> str | None:
    """Why ``fields`` is wrong for ``ram_pages``, or ``None``."""
    if len(fields) != 3:
        return f"{len(fields)} fields, expected 3"
    mn, pr, mx = fields
    if not mn <= pr <= mx:
        return f"fields out of order (min {mn}, pressure {pr}, max {mx})"
    if mx < lo * ram_pages:
        return (f"max {mx} pages is {100 * mx / ram_pages:.2f}% of RAM, below "
                f"{100 * lo:g}%: TCP runs out of socket memory under many connections")
    if mx > hi * ram_pages:
        return (f"max {mx} pages is {100 * mx / ram_pages:.0f}% of RAM, above {100 * hi:g}%: "
                "socket buffers can push the node into OOM")
    return None


def remediation(ram_pages: int) -> Remediation:
    """Drop the fixed value, or persist and apply the kernel's own value for this RAM."""
    good = " ".join(map(str, ram.kernel_tcp_mem(ram_pages)))
    return Remediation("Remove the fixed tcp_mem (the kernel sizes it from RAM at boot) or "
                       "set one scaled to this host's RAM.", (
                           Snippet.file(DROPIN, f"{KEY} = {good}\n",
                                        "tcp_mem scaled to RAM (the kernel's own formula)"),
                           Snippet.command(f"sysctl -w {KEY}='{good}'", "apply now")))


def apply_boot(value: str, where: str) -> Remediation:
    """The fix for drift (the boot value is right, the runtime one is not): write the boot
    value now, exactly (``sysctl --system`` would also rewrite every other key, in procps'
    order, which is not systemd-sysctl's); nothing to persist."""
    return Remediation(f"Apply the boot value of {KEY} now ({where}); the boot configuration "
                       "is already right.",
                       (Snippet.command(f"sysctl -w {KEY}='{value}'", "apply the boot value"),))


# ------------------------------------------------------------------ results
def run(ctx: CheckContext) -> Iterator[Result]:
    """Runtime and persisted tcp_mem against RAM."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield Result(Status.SKIP, KEY, "tcp_mem is judged against RAM, which is live state")
        return
    try:
        sz = gather(host)
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, KEY, f"cannot read tcp_mem or RAM: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    lo, hi = p["min_fraction"], p["max_fraction"]
    want = (f"max between {100 * lo:g}% and {100 * hi:g}% of RAM "
            f"({int(lo * sz.ram_pages)}-{int(hi * sz.ram_pages)} pages of {sz.page_size} "
            "bytes)")
    ev = list(sz.evidence)
    entry = resolved(host).systemd_decide(sp.normalize_key(KEY)).entry
    persisted = None
    if entry is not None and entry.value is not None:
        ev.append(Evidence.file(entry.file, entry.line, entry.raw.strip()))
        try:
            persisted = _fields(entry.value)
        except ParseError as exc:
            yield Result(Status.ERROR, KEY, f"{entry.file}:{entry.line}: {exc}",
                         evidence=tuple(ev))
            return
    data = {"runtime": sz.fields, "persisted": persisted, "ram_pages": sz.ram_pages,
            "page_size": sz.page_size}
    bad_rt = judge(sz.fields, sz.ram_pages, lo, hi)
    bad_p = judge(persisted, sz.ram_pages, lo, hi) if persisted else None
    # at boot: the persisted value, else (nothing sets it) the kernel's own for this RAM
    boot = persisted or (ram.kernel_tcp_mem(sz.ram_pages) if entry is None else None)
    boot_right = boot is not None and judge(boot, sz.ram_pages, lo, hi) is None
    if bad_rt and not boot_right:
        yield Result(Status.FAIL, KEY, f"{KEY} now: {bad_rt}", expected=want,
                     actual=sz.runtime, aspect=Aspect.RUNTIME, evidence=tuple(ev),
                     remediation=remediation(sz.ram_pages), data=data)
    elif bad_rt and boot is not None:  # the boot value is right: apply it, persist nothing
        where = (f"{entry.file}:{entry.line}" if persisted and entry is not None else
                 "the kernel's own value for this RAM: no sysctl.d file sets it")
        value = " ".join(map(str, boot))
        yield Result(Status.FAIL, KEY, f"{KEY} now: {bad_rt}; at boot it is {value} "
                     f"({where}), which is right: it was changed at runtime",
                     expected=want, actual=sz.runtime,
                     aspect=Aspect.DRIFT if persisted else Aspect.RUNTIME, evidence=tuple(ev),
                     remediation=apply_boot(value, where), data=data)
    elif bad_p and entry is not None:
        yield Result(Status.FAIL, KEY, f"{KEY} is right now, but at boot "
                     f"{entry.file}:{entry.line} sets it: {bad_p}", expected=want,
                     actual=entry.value, aspect=Aspect.DRIFT, evidence=tuple(ev),
                     remediation=remediation(sz.ram_pages), data=data)
    else:
        yield Result(Status.PASS, KEY, f"{KEY} = {sz.runtime}: max is "
                     f"{100 * sz.fields[2] / sz.ram_pages:.1f}% of RAM"
                     + (" (and the persisted value too)" if persisted else ""),
                     expected=want, actual=sz.runtime, aspect=Aspect.RUNTIME,
                     evidence=tuple(ev), data=data)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``kernel.tcp_mem``."""
    return [CheckSpec(
        id="kernel.tcp_mem", title="TCP memory limits are scaled to the host's RAM", run=run,
        modes=("live",), params_schema=PARAMS_SCHEMA,
        description="Live: /proc/sys/net/ipv4/tcp_mem (pages) against MemTotal and the page "
                    "size; the sysctl.d value systemd-sysctl writes at boot likewise.")]
