"""aiaudit.linux.cpu.cpufreq: the live policies, read once per run."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.cpu.cpufreq import cpufreq_state
from tests.checks.tuning_trees import CPU, cpufreq, intel


def test_scaling_driver_is_read_once_other_files_per_policy(make_root) -> None:
    # cpufreq.c show_scaling_driver prints the one global cpufreq_driver's name
    host = Host(str(intel(make_root, lambda c: "performance")), live=True)
    opened: list[str] = []
    orig = host._read_regular
    host._read_regular = (  # type: ignore[method-assign]
        lambda p, real, lim: (opened.append(p), orig(p, real, lim))[1])
    state = cpufreq_state(host)
    assert state.drivers == "intel_pstate" and len(state.policies) == 128
    assert [p for p in opened if p.endswith("/scaling_driver")] == [
        f"{CPU}/cpufreq/policy0/scaling_driver"]
    assert sum(p.endswith("/scaling_governor") for p in opened) == 128
    # a policy without the file (not a kernel layout) does not stop the others
    files = cpufreq(2, "acpi-cpufreq", lambda c: "performance")
    del files[f"{CPU}/cpufreq/policy0/scaling_driver"]
    state = cpufreq_state(Host(str(make_root(files)), live=True))
    assert [p.driver for p in state.policies] == ["unknown", "acpi-cpufreq"]

