"""The result model: evidence of a read that failed."""

from __future__ import annotations

import pytest

from aiaudit.core.errors import HostError, NotFound, TooLarge
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence


def test_a_failed_read_names_its_path(make_root) -> None:
    root = make_root({"/etc/big.conf": "x" * 100, "/proc/meminfo": "MemTotal: 1 kB\n"})
    host = Host(str(root), live=True, read_cap=10)
    with pytest.raises(NotFound) as missing:
        host.read_text("/proc/mounts")
    assert Evidence.unreadable(missing.value) == (
        Evidence.runtime("/proc/mounts", "no such file or directory"),)
    with pytest.raises(NotFound) as missing:
        host.read_text("/etc/absent.conf")
    # a file that does not exist is no location: a default names it
    assert Evidence.unreadable(missing.value) == (
        Evidence.default("etc/absent.conf", "no such file or directory"),)
    with pytest.raises(TooLarge) as big:
        host.read_text("/etc/big.conf")
    [e] = Evidence.unreadable(big.value)
    assert (e.kind, e.path) == ("file", "/etc/big.conf") and "read cap" in (e.value or "")
    assert Evidence.unreadable(HostError("no path here")) == ()
    assert Evidence.unreadable(ValueError("x")) == ()
