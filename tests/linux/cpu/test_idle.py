"""aiaudit.linux.cpu.idle: the live cpuidle states."""

from __future__ import annotations

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.cpu.idle import idle_state
from tests.checks.tuning_trees import CPU


def test_live_sysfs_matches_a_full_per_cpu_read() -> None:
    """Oracle on this machine's own /sys: the shared driver table and the per-CPU
    ``disable`` values equal what reading every CPU's every file gives."""
    import os
    from pathlib import Path


    cpu0 = Path(CPU) / "cpu0/cpuidle"
    if not (cpu0 / "state0").is_dir():
        pytest.skip("no cpuidle states on this machine")
    full = {}
    for c in sorted(int(n[3:]) for n in os.listdir(CPU) if n[3:].isdigit()):
        d = Path(CPU) / f"cpu{c}/cpuidle"
        if not d.is_dir():
            continue
        full[c] = tuple(
            (s.name, (s / "name").read_text().strip(), int((s / "latency").read_text()),
             (s / "disable").read_text().strip() == "1")
            for s in sorted(d.iterdir(), key=lambda p: p.name) if s.name.startswith("state"))
    state = idle_state(Host("/", live=True), 0)   # bound 0: every state but POLL is deep
    got = {c.cpu: tuple((s, n, lat, dis if lat > 0 else False) for s, n, lat, dis in c.states)
           for c in state.cpus}
    want = {c: tuple((s, n, lat, dis if lat > 0 else False) for s, n, lat, dis in st)
            for c, st in full.items() if c in got}
    assert got == want and got and set(got) <= set(full)
