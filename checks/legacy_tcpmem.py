"""``kernel.tcp_mem``: ``net.ipv4.tcp_mem`` judged against the host's RAM.

``tcp_mem`` is three numbers in *pages* (Documentation/networking/ip-sysctl.rst: min,
pressure, max): above ``max`` TCP refuses socket memory and drops.  The kernel sizes it at
boot from free memory (net/ipv4/tcp.c ``tcp_init_mem``: ``limit = nr_free_buffer_pages() /
16``, min = 3/4 of that, pressure = limit, max = 2 x min, so max is about 9% of RAM).  A
fixed value copied from a tuning guide for a small host leaves a 1 TiB training node a
fraction of a percent; one above RAM lets TCP buffers push the node into OOM.

The check wants ``min <= pressure <= max`` and ``max`` between ``min_fraction`` and
``max_fraction`` of RAM (``MemTotal`` of /proc/meminfo, Documentation/filesystems/proc.rst).
The page size comes from ``/sys/kernel/mm/transparent_hugepage/hpage_pmd_size``
(admin-guide/mm/transhuge.rst): a PMD maps ``page_size / 8`` pages, so the PMD size is
``page_size**2 / 8`` (2 MiB with 4 KiB pages, 512 MiB with the 64 KiB pages of many Arm
servers).  RAM is live state, so offline the rule skips.  The persisted value (what
systemd-sysctl writes at boot, :mod:`aiaudit.checks.legacy_sysctl`) is judged against the same RAM
when a file sets it.
"""

from __future__ import annotations

import math
import re
from typing import Iterator

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
from aiaudit.core.parsing import to_int
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl.files import load_config

KEY = "net.ipv4.tcp_mem"
PROC = "/proc/sys/net/ipv4/tcp_mem"
PMD = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"


def page_size(host_pmd: str | None) -> tuple[int, str]:
    """(page size, how it was found) from the PMD size text, else 4096."""
    if host_pmd and host_pmd.strip().isdigit() and len(host_pmd.strip()) <= 20:
        pmd = int(host_pmd.strip())
        ps = math.isqrt(pmd * 8)
        if ps * ps == pmd * 8 and ps in (4096, 16384, 65536):
            return ps, f"{PMD} = {pmd}"
    return 4096, "assumed 4096 (no hpage_pmd_size)"


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


def _fields(text: str) -> list[int]:
    parts = text.split()
    if not all(re.fullmatch(r"\d{1,19}", p) for p in parts):
        raise ParseError(f"not three page counts: {text.strip()[:60]!r}")
    return [int(p) for p in parts]


def _mem_total_kb(meminfo: str) -> tuple[int, str]:
    """MemTotal in kB and its line, from ``/proc/meminfo`` (fs/proc/meminfo.c)."""
    m = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, re.M)
    if not m:
        raise ParseError("no MemTotal in /proc/meminfo")
    line = meminfo.count("\n", 0, m.start()) + 1
    return to_int(m.group(1), what="MemTotal", source="/proc/meminfo", line=line), m.group(0)


def run(ctx: CheckContext) -> Iterator[Result]:
    """Runtime and persisted tcp_mem against RAM."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield Result(Status.SKIP, KEY, "tcp_mem is judged against RAM, which is live state")
        return
    try:
        mem_kb, mem_line = _mem_total_kb(host.read_text("/proc/meminfo"))
        ps, how = page_size(host.try_read_text(PMD))
        ram_pages = mem_kb * 1024 // ps
        runtime = host.read_text(PROC).strip()
        rt = _fields(runtime)
    except (HostError, ParseError) as exc:
        yield Result(Status.ERROR, KEY, f"cannot read tcp_mem or RAM: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    lo, hi = p["min_fraction"], p["max_fraction"]
    want = (f"max between {100 * lo:g}% and {100 * hi:g}% of RAM "
            f"({int(lo * ram_pages)}-{int(hi * ram_pages)} pages of {ps} bytes)")
    ev = [Evidence.runtime(PROC, runtime), Evidence.runtime("/proc/meminfo", mem_line),
          Evidence.default("page size", f"{ps} ({how})")]
    cfg = host.memo(("sysctl-config",), lambda: load_config(host))
    dec = sp.systemd_decide(cfg.entries, sp.normalize_key(KEY))
    persisted = None
    if dec.value is not None and dec.entry is not None:
        ev.append(Evidence.file(dec.entry.file, dec.entry.line, dec.entry.raw.strip()))
        try:
            persisted = _fields(dec.value)
        except ParseError as exc:
            yield Result(Status.ERROR, KEY, f"{dec.entry.file}:{dec.entry.line}: {exc}",
                         evidence=tuple(ev))
            return
    good = [int(ram_pages / 16 * 3 / 4), int(ram_pages / 16), int(ram_pages / 16 * 3 / 2)]
    fix = Remediation("Remove the fixed tcp_mem (the kernel sizes it from RAM at boot) or set "
                      "one scaled to this host's RAM.", (
                          Snippet.file("/etc/sysctl.d/99-zz-aiaudit.conf",
                                       f"{KEY} = {' '.join(map(str, good))}\n",
                                       "tcp_mem scaled to RAM (the kernel's own formula)"),
                          Snippet.command(f"sysctl -w {KEY}='{' '.join(map(str, good))}'",
                                          "apply now")))
    bad_rt = judge(rt, ram_pages, lo, hi)
    data = {"runtime": rt, "persisted": persisted, "ram_pages": ram_pages, "page_size": ps}
    if bad_rt:
        yield Result(Status.FAIL, KEY, f"{KEY} now: {bad_rt}", expected=want, actual=runtime,
                     aspect=Aspect.RUNTIME, evidence=tuple(ev), remediation=fix, data=data)
        return
    bad_p = judge(persisted, ram_pages, lo, hi) if persisted else None
    if bad_p:
        yield Result(Status.FAIL, KEY, f"{KEY} is right now, but at boot "
                     f"{dec.entry.file}:{dec.entry.line} sets it: {bad_p}", expected=want,
                     actual=dec.value, aspect=Aspect.DRIFT, evidence=tuple(ev),
                     remediation=fix, data=data)
        return
    yield Result(Status.PASS, KEY, f"{KEY} = {runtime}: max is {100 * rt[2] / ram_pages:.1f}% "
                 "of RAM" + (" (and the persisted value too)" if persisted else ""),
                 expected=want, actual=runtime, aspect=Aspect.RUNTIME, evidence=tuple(ev),
                 data=data)


THREADS_PROC = "/proc/sys/kernel/threads-max"
FUTEX_TID_MASK = 0x3FFFFFFF
"""Upper bound of threads-max (kernel/fork.c ``MAX_THREADS``)."""


def kernel_threads_max(mem_kb: int, ps: int) -> int:
    """The kernel's boot value of threads-max for this much RAM (kernel/fork.c
    ``set_max_threads``: as many threads as fit their stacks in 1/8 of RAM; THREAD_SIZE is
    16 KiB on x86_64 and on arm64 with 4 KiB pages, one page with larger pages)."""
    thread_size = max(16384, ps)
    pages = mem_kb * 1024 // ps
    return max(20, min(FUTEX_TID_MASK, pages * ps // (8 * thread_size)))


def run_threads(ctx: CheckContext) -> Iterator[Result]:
    """threads-max not lowered below the kernel's RAM-derived value (nor below a floor)."""
    host, p = ctx.host, ctx.params
    if not host.live:
        yield Result(Status.SKIP, "kernel.threads-max", "the kernel sizes threads-max from "
                     "RAM, which is live state")
        return
    try:
        mem_kb, mem_line = _mem_total_kb(host.read_text("/proc/meminfo"))
        ps, how = page_size(host.try_read_text(PMD))
        have = to_int(host.read_text(THREADS_PROC).strip(), what="threads-max",
                      source=THREADS_PROC, line=1)
    except (HostError, ParseError, ValueError) as exc:
        yield Result(Status.ERROR, "kernel.threads-max", f"cannot read threads-max or RAM: {exc}",
                     evidence=Evidence.unreadable(exc))
        return
    default = kernel_threads_max(mem_kb, ps)
    # MemTotal is a little below totalram_pages: allow 10% so the default itself passes
    want = max(int(default * 0.9), int(p["min_value"]))
    ev = (Evidence.runtime(THREADS_PROC, str(have)),
          Evidence.runtime("/proc/meminfo", mem_line),
          Evidence.default("page size", f"{ps} ({how})"))
    data = {"runtime": have, "kernel_default": default}
    if have < want:
        yield Result(Status.FAIL, "kernel.threads-max", f"kernel.threads-max is {have}, below "
                     f"{want} (the kernel's own value for this RAM is about {default}): "
                     "DataLoader workers and their threads hit EAGAIN in fork/clone",
                     expected=f">= {want}", actual=str(have), aspect=Aspect.RUNTIME,
                     evidence=ev, data=data, remediation=Remediation(
                         "Remove the sysctl.d line that lowers kernel.threads-max (the "
                         "kernel sizes it from RAM), then `sysctl -w "
                         f"kernel.threads-max={default}`."))
    else:
        yield Result(Status.PASS, "kernel.threads-max", f"kernel.threads-max is {have} (kernel "
                     f"value for this RAM about {default})", expected=f">= {want}",
                     actual=str(have), aspect=Aspect.RUNTIME, evidence=ev, data=data)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register the RAM-scaled kernel limit checks."""
    return [CheckSpec(
        id="kernel.threads_max", title="The thread limit is not lowered below the RAM-based "
        "default", run=run_threads, modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "min_value": {"type": "integer", "minimum": 0, "default": 0,
                          "description": "also require at least this (0: only the kernel's "
                                         "RAM-derived value)"}}},
        description="Live: /proc/sys/kernel/threads-max against kernel/fork.c's value for "
                    "MemTotal (90% of it, since MemTotal is below total RAM)."), CheckSpec(
        id="kernel.tcp_mem", title="TCP memory limits are scaled to the host's RAM", run=run,
        modes=("live",),
        params_schema={"type": "object", "additionalProperties": False, "properties": {
            "min_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1,
                             "default": 0.03},
            "max_fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1,
                             "default": 0.5}}},
        description="Live: /proc/sys/net/ipv4/tcp_mem (pages) against MemTotal and the page "
                    "size; the sysctl.d value systemd-sysctl writes at boot likewise.")]
