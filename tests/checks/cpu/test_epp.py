"""cpu.epp: live preference, units, tuned, forced by the performance governor."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.checks.tuning_trees import TUNED_ENABLED, TUNED_LINK, cpufreq, intel
from tests.helpers import run_check


def test_epp(make_root) -> None:
    root = intel(make_root, lambda c: "powersave",
                  lambda c: "balance_power" if c < 8 else "performance")
    (r,) = run_check("cpu.epp", root, {"values": ["performance"]}, live=True)
    assert r.status is Status.FAIL and "balance_power on CPUs 0-7" in r.message
    root = intel(make_root, lambda c: "performance", lambda c: "performance",
                  extra={"/etc/kernel/cmdline": "cpufreq.default_governor=performance\n"})
    (r,) = run_check("cpu.epp", root, {"values": ["performance"]}, live=True)
    assert r.status is Status.PASS and "forced by the performance governor" in r.message
    root = make_root(cpufreq(4, "acpi-cpufreq", lambda c: "performance"))
    (r,) = run_check("cpu.epp", root, live=True)
    assert r.status is Status.SKIP and "acpi-cpufreq has no energy_performance_preference" \
        in r.message


def test_epp_offline(make_root) -> None:
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/p/tuned.conf": "[cpu]\nenergy_performance_preference=balance_power\n"}
    (r,) = run_check("cpu.epp", make_root(files, TUNED_LINK))
    assert r.status is Status.FAIL and r.aspect is Aspect.PERSISTED
    files["/etc/tuned/p/tuned.conf"] = "[cpu]\nenergy_performance_preference=performance\n"
    (r,) = run_check("cpu.epp", make_root(files, TUNED_LINK))
    assert r.status is Status.PASS


def test_epp_offline_nothing_set_names_what_was_looked_for(make_root) -> None:
    """No unit, no tuned setting and a governor that does not force it: the driver default
    applies; the kernel config line that made the governor schedutil is evidence too."""
    cfg = {"/boot/config-6.1.0": "CONFIG_CPU_FREQ_DEFAULT_GOV_SCHEDUTIL=y\n"}
    (r,) = run_check("cpu.epp", make_root(cfg), {"values": ["performance"]})
    assert r.status is Status.FAIL and "not set (kernel default unknown)" in r.message
    assert [(e.kind, e.source) for e in r.evidence][1:] == [("file", "boot/config-6.1.0:1")]
    ev = r.evidence[0]
    assert ev.kind == "default" and ev.value.startswith("driver default")
    assert ev.source == ("energy performance preference at boot: no enabled unit writing "
                         "energy_performance_preference; no tuned [cpu] "
                         "energy_performance_preference (tuned not enabled); the boot governor "
                         "is schedutil (kernel default (boot/config-6.1.0:1)), not performance")
    # the governor unknown too (cpu.governor's own result says where it looked)
    (r,) = run_check("cpu.epp", make_root({}), {"values": ["performance"]})
    [ev] = r.evidence
    assert ev.kind == "default" and ev.source.endswith("the boot governor is unknown")

