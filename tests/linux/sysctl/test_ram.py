"""Sysctls the kernel sizes from RAM (:mod:`aiaudit.linux.sysctl.ram`): page size, MemTotal
and the kernel's own formulas."""

from __future__ import annotations

import pytest

from aiaudit.core.errors import ParseError
from aiaudit.linux.sysctl import ram


def test_page_size_from_pmd() -> None:
    assert ram.page_size("2097152")[0] == 4096
    assert ram.page_size("536870912")[0] == 65536
    assert ram.page_size("33554432")[0] == 16384
    assert ram.page_size(None)[0] == 4096
    assert ram.page_size("12345")[0] == 4096


def test_kernel_threads_max() -> None:
    assert ram.kernel_threads_max(263921664, 4096) == 2061888
    assert ram.kernel_threads_max(1, 4096) == 20  # the kernel's floor


def test_mem_total_and_its_line() -> None:
    kb, line = ram.mem_total_kb("Foo: 1 kB\nMemTotal:       263921664 kB\nMemFree: 2 kB\n")
    assert (kb, line) == (263921664, "MemTotal:       263921664 kB")
    with pytest.raises(ParseError):
        ram.mem_total_kb("MemFree: 2 kB\n")


def test_kernel_tcp_mem_is_about_9_percent_of_ram() -> None:
    pages = 65980416
    mn, pr, mx = ram.kernel_tcp_mem(pages)
    assert mn <= pr <= mx and 0.09 <= mx / pages <= 0.1
