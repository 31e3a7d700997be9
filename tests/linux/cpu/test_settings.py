"""aiaudit.linux.cpu.settings: cpufreq settings at the next boot."""

from __future__ import annotations

import pytest

from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.linux.cpu import settings
from aiaudit.linux.cpu.cpufreq import CpufreqState, Policy
from aiaudit.linux.cpu.settings import BootSetting

EV = Evidence.default("x", "y")


@pytest.mark.parametrize(("opts", "gov"), [
    ("frequency-set -g performance", "performance"),
    ("frequency-set --governor=ondemand", "ondemand"),
    ("frequency-set --governor powersave -g performance", "powersave"),   # the first
    ("idle-set -g performance", None),
    ("frequency-set -g", None),
    ("frequency-set -g 'unterminated", "'unterminated"),      # split on blanks then
])
def test_cpupower_opts_governor(opts: str, gov: str | None) -> None:
    assert settings.cpupower_opts_governor(opts) == gov


def test_boot_chain_last_wins() -> None:
    default = BootSetting("schedutil", "kernel default", EV)
    a, b = BootSetting("ondemand", "a", EV), BootSetting("performance", "b", EV)
    assert settings.boot_chain(default) == (default, [EV], False)
    win, ev, explicit = settings.boot_chain(default, [a], [], [b])
    assert win is b and len(ev) == 3 and explicit
    assert settings.boot_chain(None) == (None, [], False)


def _state(*drivers: str) -> CpufreqState:
    return CpufreqState((), tuple(Policy(f"policy{i}", (i,), d, "powersave", None, None)
                                  for i, d in enumerate(drivers)), None, None, None)


def test_active_mode_default() -> None:
    sched = BootSetting("schedutil", "kernel default (boot/config-6.1:9)", EV)
    got = settings.active_mode_default(sched, False, _state("intel_pstate"))
    assert got is not None and (got.value, got.source) == (
        "powersave", "intel_pstate active mode default (kernel default (boot/config-6.1:9) is "
        "not performance)")
    assert settings.active_mode_default(sched, True, _state("intel_pstate")) is sched
    assert settings.active_mode_default(sched, False, _state("acpi-cpufreq")) is sched
    assert settings.active_mode_default(sched, False, None) is sched
    perf = BootSetting("performance", "kernel default", EV)
    assert settings.active_mode_default(perf, False, _state("amd-pstate-epp")) is perf


def test_unit_settings_flags_and_sysfs_writes(make_root) -> None:
    units = {"/etc/systemd/system/a.service":
             "[Service]\nExecStart=/usr/bin/cpupower frequency-set -g powersave "
             "--governor=ondemand\n"
             "ExecStartPost=/bin/sh -c 'echo performance > /sys/devices/system/cpu/cpufreq/"
             "policy0/scaling_governor'\n"}
    links = {"/etc/systemd/system/multi-user.target.wants/a.service":
             "/etc/systemd/system/a.service"}
    host = Host(str(make_root(units, links)))
    got = settings.unit_settings(host, "scaling_governor", settings.GOVERNOR_FLAGS)
    assert [(s.value, s.source) for s in got] == [
        ("performance", "a.service (etc/systemd/system/a.service:3)"),
        ("powersave", "a.service (etc/systemd/system/a.service:2)"),
        ("ondemand", "a.service (etc/systemd/system/a.service:2)")]
    assert settings.unit_settings(host, "energy_performance_preference") == []


def test_boost_at_boot() -> None:
    assert settings.boost_at_boot([]).value == "enabled"
    off = BootSetting("1", "t.service (etc/systemd/system/t.service:2)", EV)
    assert settings.boost_at_boot([off]) == BootSetting("disabled", off.source, EV)
