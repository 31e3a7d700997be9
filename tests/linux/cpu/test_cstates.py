"""aiaudit.linux.cpu.cstates: the C-state limits of command lines, tuned and cpupower."""

from __future__ import annotations

import pytest

from aiaudit.core.errors import ParseError
from aiaudit.linux.boot.cmdline import CmdlineSource
from aiaudit.linux.boot.loaders import parse_cmdline
from aiaudit.linux.cpu import cstates
from aiaudit.linux.cpu.idle import CpuIdle, IdleState


def _src(text: str) -> CmdlineSource:
    return CmdlineSource("proc", "/proc/cmdline", None, text, tuple(parse_cmdline(text)))


@pytest.mark.parametrize(("cmdline", "driver", "holds", "why"), [
    ("idle=poll", "intel_idle", True, "idle=poll (no cpuidle driver: only polling or HLT)"),
    ("cpuidle.off=1", None, True, "cpuidle.off=1 (no cpuidle driver)"),
    ("cpuidle.off=0", None, False, "no C-state parameter"),
    ("intel_idle.max_cstate=1", "intel_idle", True, "intel_idle.max_cstate=1"),
    ("processor.max_cstate=1", "intel_idle", False,
     "processor.max_cstate=1 (intel_idle is the driver)"),
    ("intel_idle.max_cstate=1", "acpi_idle", False, "intel_idle.max_cstate=1 (acpi_idle is "
     "the driver: only processor.max_cstate limits it)"),
    ("processor.max_cstate=0", "acpi_idle", True, "processor.max_cstate=0"),   # 0 acts as 1
    ("intel_idle.max_cstate=0", "intel_idle", False,
     "intel_idle.max_cstate=0 (intel_idle is the driver)"),
    # offline: either driver's limit counts, with the caveat for the other one
    ("intel_idle.max_cstate=1 processor.max_cstate=1", None, True,
     "intel_idle.max_cstate=1 processor.max_cstate=1"),
    ("intel_idle.max_cstate=1", None, True, "intel_idle.max_cstate=1 (limits intel_idle on "
     "Intel CPUs; acpi_idle hosts such as AMD also need processor.max_cstate)"),
    ("intel_idle.max_cstate=0 processor.max_cstate=1", None, True,
     "intel_idle.max_cstate=0 processor.max_cstate=1"),
    ("processor.max_cstate=1", None, True, "processor.max_cstate=1 (limits acpi_idle; Intel "
     "hosts with intel_idle also need intel_idle.max_cstate)"),
    ("intel_idle.max_cstate=x quiet", None, False, "no C-state parameter"),
])
def test_cmdline_limit(cmdline: str, driver: str | None, holds: bool, why: str) -> None:
    assert cstates.cmdline_limit(_src(cmdline), 1, driver) == (holds, why)


@pytest.mark.parametrize(("value", "holds"), [
    ("3", True), ("200", False), ("cstate.id:1", True), ("cstate.id_no_zero:2|3", False),
    ("cstate.name:C1|5", True), ("cstate.name:C6|200", False), ("cstate.name:C1", False),
])
def test_force_latency_holds(value: str, holds: bool) -> None:
    assert cstates.force_latency_holds(value, 10, 1) is holds


def test_force_latency_too_many_digits_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        cstates.force_latency_holds("9" * 5000, 10, 1)


def _cpu(n: int, disabled: bool = False, qos: int | None = None) -> CpuIdle:
    return CpuIdle(n, (("state0", "POLL", 0, False), ("state3", "C6", 170, disabled)), qos)


def test_runtime_limit_names_the_cpus_or_what_holds() -> None:
    state = IdleState("intel_idle", (_cpu(0), _cpu(1, disabled=True), _cpu(2, qos=5)))
    now = cstates.runtime_limit(state, None, None, False, 10, 1)
    assert now is not None and not now.ok
    assert now.text == "missing: CPUs 0 can enter C6 (170 µs) (driver intel_idle)"
    tuned = cstates.Limiter(True, "tuned force_latency=3 (tuned profile p)", now.evidence[0])
    now = cstates.runtime_limit(state, None, tuned, True, 10, 1)
    assert now is not None and now.ok and now.text == (
        "held (PM QoS resume latency 5 µs; disabled in cpuidle/stateN/disable; "
        "tuned force_latency=3 (tuned profile p))")
    assert len(now.evidence) == 2
    # tuned configured but not running: it holds nothing now
    now = cstates.runtime_limit(state, None, tuned, False, 10, 1)
    assert now is not None and not now.ok


def test_runtime_limit_without_deep_states_or_cpuidle() -> None:
    shallow = IdleState("intel_idle", (CpuIdle(0, (("state0", "POLL", 0, False),), None),))
    now = cstates.runtime_limit(shallow, _src("ro"), None, False, 10, 1)
    assert now is not None and now.ok and now.nothing_to_limit
    assert now.text == "held (no state deeper than 10 µs)"
    now = cstates.runtime_limit(shallow, _src("intel_idle.max_cstate=1"), None, False, 10, 1)
    assert now is not None and not now.nothing_to_limit
    assert now.text == "held (intel_idle.max_cstate=1 on /proc/cmdline)"
    none = IdleState("none", ())
    assert cstates.runtime_limit(none, _src("ro"), None, False, 10, 1) is None
    now = cstates.runtime_limit(none, _src("idle=poll"), None, False, 10, 1)
    assert now is not None and now.text == ("held: no cpuidle states (idle=poll (no cpuidle "
                                            "driver: only polling or HLT) on /proc/cmdline)")


def test_drift() -> None:
    a, b = _src("ro intel_idle.max_cstate=1"), _src("ro quiet intel_idle.max_cstate=1")
    assert cstates.drift(a, b, None, 1) is None           # other words do not matter
    assert cstates.drift(_src("ro"), a, "intel_idle", 1) == (
        "drift: /proc/cmdline has no C-state parameter (intel_idle is the driver), the "
        "bootloader will pass intel_idle.max_cstate=1")
    assert cstates.drift(None, a, None, 1) is None
