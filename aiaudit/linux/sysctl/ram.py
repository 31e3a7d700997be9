"""Sysctls the kernel sizes from RAM at boot, and the RAM and page size they are sized by.

RAM is ``MemTotal`` of ``/proc/meminfo`` (Documentation/filesystems/proc.rst,
fs/proc/meminfo.c).  The page size comes from
``/sys/kernel/mm/transparent_hugepage/hpage_pmd_size`` (admin-guide/mm/transhuge.rst): a PMD
maps ``page_size / 8`` pages, so the PMD size is ``page_size**2 / 8`` (2 MiB with 4 KiB
pages, 512 MiB with the 64 KiB pages of many Arm servers).  Both are live state.

* ``net.ipv4.tcp_mem`` (net/ipv4/tcp.c ``tcp_init_mem``): ``limit =
  nr_free_buffer_pages() / 16``, min = 3/4 of that, pressure = limit, max = 2 x min.
* ``kernel.threads-max`` (kernel/fork.c ``set_max_threads``): as many threads as fit their
  stacks in 1/8 of RAM, capped at ``FUTEX_TID_MASK``.
"""

from __future__ import annotations

import math
import re

from aiaudit.core.errors import ParseError
from aiaudit.core.parsing import to_int

MEMINFO = "/proc/meminfo"
PMD = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"
FUTEX_TID_MASK = 0x3FFFFFFF
"""Upper bound of threads-max (kernel/fork.c ``MAX_THREADS``)."""


def page_size(host_pmd: str | None) -> tuple[int, str]:
    """(page size, how it was found) from the PMD size text, else 4096."""
    if host_pmd and host_pmd.strip().isdigit() and len(host_pmd.strip()) <= 20:
        pmd = int(host_pmd.strip())
        ps = math.isqrt(pmd * 8)
        if ps * ps == pmd * 8 and ps in (4096, 16384, 65536):
            return ps, f"{PMD} = {pmd}"
    return 4096, "assumed 4096 (no hpage_pmd_size)"


def mem_total_kb(meminfo: str) -> tuple[int, str]:
    """MemTotal in kB and its line, from ``/proc/meminfo`` (fs/proc/meminfo.c); ParseError
    when there is none."""
    m = re.search(r"^MemTotal:\s+(\d+) kB", meminfo, re.M)
    if not m:
        raise ParseError("no MemTotal in /proc/meminfo")
    line = meminfo.count("\n", 0, m.start()) + 1
    return to_int(m.group(1), what="MemTotal", source=MEMINFO, line=line), m.group(0)


def kernel_tcp_mem(ram_pages: int) -> list[int]:
    """The kernel's boot value of ``tcp_mem`` (min, pressure, max in pages) for this many
    pages of RAM (``tcp_init_mem``, with RAM standing in for the free buffer pages)."""
    return [int(ram_pages / 16 * 3 / 4), int(ram_pages / 16), int(ram_pages / 16 * 3 / 2)]


def kernel_threads_max(mem_kb: int, ps: int) -> int:
    """The kernel's boot value of threads-max for this much RAM (kernel/fork.c
    ``set_max_threads``: as many threads as fit their stacks in 1/8 of RAM; THREAD_SIZE is
    16 KiB on x86_64 and on arm64 with 4 KiB pages, one page with larger pages)."""
    thread_size = max(16384, ps)
    pages = mem_kb * 1024 // ps
    return max(20, min(FUTEX_TID_MASK, pages * ps // (8 * thread_size)))
