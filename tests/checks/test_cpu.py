"""cpu.governor, cpu.epp, cpu.boost; the tuned profile resolver."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Status
from aiaudit.linux.tuned import profiles as tuned
from tests.checks.tuning_trees import CPU, TUNED_ENABLED, TUNED_LINK, cpufreq
from tests.helpers import run_check

PERF = {"governors": ["performance"]}
SOCK0 = lambda c: (c % 64) < 32  # noqa: E731


def _intel(make_root, gov, epp=None, extra=None, links=None):
    files = cpufreq(128, "intel_pstate", gov, epp)
    files[f"{CPU}/intel_pstate/status"] = "active\n"
    files[f"{CPU}/intel_pstate/no_turbo"] = "0\n"
    files["/proc/cmdline"] = "ro quiet\n"
    files.update(extra or {})
    return make_root(files, links or {})


def test_governor_live_fail_lists_cpus_compactly_with_driver(make_root) -> None:
    root = _intel(make_root, lambda c: "powersave" if SOCK0(c) else "performance")
    (r,) = run_check("cpu.governor", root, PERF, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    assert "powersave on CPUs 0-31,64-95" in r.message and "(intel_pstate)" in r.message
    assert r.data["offending_cpus"] == "0-31,64-95"
    kinds = [s.kind for s in r.remediation.snippets]
    assert kinds == ["file", "enable", "command"]
    assert "cpupower frequency-set -g performance" in r.remediation.snippets[2].content


def test_governor_live_pass_persisted_by_rhel_cpupower(make_root) -> None:
    extra = {"/etc/sysconfig/cpupower": 'CPUPOWER_START_OPTS="frequency-set -g performance"\n'
                                        'CPUPOWER_STOP_OPTS="frequency-set -g ondemand"\n',
             "/usr/lib/systemd/system/cpupower.service": "[Service]\nExecStart=/x\n"}
    links = {"/etc/systemd/system/multi-user.target.wants/cpupower.service":
             "/usr/lib/systemd/system/cpupower.service"}
    root = _intel(make_root, lambda c: "performance", extra=extra, links=links)
    (r,) = run_check("cpu.governor", root, PERF, live=True)
    assert r.status is Status.PASS and "etc/sysconfig/cpupower:1" in r.message
    # the same config without the service enabled does not count
    root = _intel(make_root, lambda c: "performance", extra=extra)
    (r,) = run_check("cpu.governor", root, PERF, live=True)
    assert r.status is Status.PASS and "a reboot may change it" in r.message


def test_governor_offline_kernel_config_and_cmdline(make_root) -> None:
    cfg = {"/boot/config-6.1.0": "CONFIG_CPU_FREQ_DEFAULT_GOV_SCHEDUTIL=y\n"}
    (r,) = run_check("cpu.governor", make_root(cfg), PERF)
    assert r.status is Status.FAIL and r.aspect is Aspect.PERSISTED and "schedutil" in r.message
    cfg["/etc/default/grub"] = 'GRUB_CMDLINE_LINUX="cpufreq.default_governor=performance"\n'
    (r,) = run_check("cpu.governor", make_root(cfg), PERF)
    assert r.status is Status.PASS and r.evidence[-1].source == "etc/default/grub:1"
    (r,) = run_check("cpu.governor", make_root({}), PERF)
    assert r.status is Status.FAIL and "kernel default unknown" in r.message


def test_governor_unit_with_echo_to_sysfs(make_root) -> None:
    unit = ("[Service]\nType=oneshot\nExecStart=/bin/sh -c 'for p in /sys/devices/system/cpu/"
            "cpufreq/policy*; do echo performance > $p/scaling_governor; done'\n")
    files = {"/etc/systemd/system/gov.service": unit}
    links = {"/etc/systemd/system/multi-user.target.wants/gov.service":
             "/etc/systemd/system/gov.service"}
    (r,) = run_check("cpu.governor", make_root(files, links), PERF)
    assert r.status is Status.PASS and "gov.service" in r.message


def test_vm_without_cpufreq_skips(make_root) -> None:
    root = make_root({f"{CPU}/online": "0-3\n"}, dirs=(f"{CPU}/cpufreq",))
    for check in ("cpu.governor", "cpu.epp", "cpu.boost"):
        (r,) = run_check(check, root, live=True)
        assert r.status is Status.SKIP and r.message.startswith("no cpufreq")


def test_epp(make_root) -> None:
    root = _intel(make_root, lambda c: "powersave",
                  lambda c: "balance_power" if c < 8 else "performance")
    (r,) = run_check("cpu.epp", root, {"values": ["performance"]}, live=True)
    assert r.status is Status.FAIL and "balance_power on CPUs 0-7" in r.message
    root = _intel(make_root, lambda c: "performance", lambda c: "performance",
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


def test_boost(make_root) -> None:
    root = _intel(make_root, lambda c: "performance",
                  extra={f"{CPU}/intel_pstate/no_turbo": "1\n"})
    (r,) = run_check("cpu.boost", root, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    assert "intel_pstate/no_turbo=1 on CPUs 0-127" in r.message
    root = make_root({**cpufreq(4, "amd-pstate", lambda c: "performance"),
                      f"{CPU}/cpufreq/boost": "1\n"})
    (r,) = run_check("cpu.boost", root, live=True)
    assert r.status is Status.PASS
    root = make_root(cpufreq(4, "cppc_cpufreq", lambda c: "performance"))
    (r,) = run_check("cpu.boost", root, live=True)
    assert r.status is Status.SKIP and "no turbo/boost control" in r.message
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/p/tuned.conf": "[cpu]\nno_turbo=true\n"}
    (r,) = run_check("cpu.boost", make_root(files, TUNED_LINK))
    assert r.status is Status.FAIL and r.aspect is Aspect.PERSISTED and "no_turbo" in r.message
    (r,) = run_check("cpu.boost", make_root({}))
    assert r.status is Status.PASS


# ---------------------------------------------------------------------- tuned resolver
def test_tuned_include_chain_precedence_and_cycle(make_root) -> None:
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "top extra\n",
             "/etc/tuned/top/tuned.conf": "[main]\ninclude=mid\n[cpu]\ngovernor=performance\n",
             "/usr/lib/tuned/top/tuned.conf": "[cpu]\ngovernor=powersave\n",   # hidden by /etc
             "/usr/lib/tuned/profiles/mid/tuned.conf":
                 "[main]\ninclude=base;top\n[cpu]\nforce_latency=1\n",
             "/usr/lib/tuned/base/tuned.conf": "[cpu]\ngovernor=ondemand\nforce_latency=99\n"
                                               "energy_perf_bias=normal\n",
             "/usr/lib/tuned/extra/tuned.conf": "[vm]\ntransparent_hugepages=never\n"}
    st = tuned.load(Host(str(make_root(files, TUNED_LINK))))
    assert st.active and st.names == ("top", "extra")
    assert [f.split("/")[-2] for f in st.files] == ["base", "mid", "top", "extra"]
    assert st.get("cpu", "governor").value == "performance"
    assert st.get("cpu", "force_latency").value == "1"
    assert st.get("cpu", "energy_perf_bias").file == "/usr/lib/tuned/base/tuned.conf"
    assert st.get("vm", "transparent_hugepages").value == "never"
    assert any("cycle" in n for n in st.notes)


def test_tuned_not_enabled_or_missing_profile(make_root) -> None:
    files = {"/etc/tuned/active_profile": "p\n", "/etc/tuned/p/tuned.conf": "[cpu]\ngovernor=x\n"}
    st = tuned.load(Host(str(make_root(files))))
    assert not st.active and st.get("cpu", "governor") is None
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "gone\n"}
    st = tuned.load(Host(str(make_root(files, TUNED_LINK))))
    assert not st.active and "not found" in st.problems[0]


def test_tuned_profile_dirs_from_main_conf(make_root) -> None:
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/tuned-main.conf": "# dirs\nprofile_dirs = /usr/lib/tuned,/opt/tuned\n",
             "/opt/tuned/p/tuned.conf": "[cpu]\ngovernor=performance\n",
             "/etc/tuned/p/tuned.conf": "[cpu]\ngovernor=powersave\n"}   # not searched
    st = tuned.load(Host(str(make_root(files, TUNED_LINK))))
    assert st.get("cpu", "governor").value == "performance"


def test_governor_remediation_names_the_wrong_boot_setting(make_root) -> None:
    unit = {"/etc/systemd/system/g.service":
            "[Service]\nExecStart=/usr/bin/cpupower frequency-set --governor=powersave\n"}
    links = {"/etc/systemd/system/multi-user.target.wants/g.service":
             "/etc/systemd/system/g.service"}
    (r,) = run_check("cpu.governor", make_root(unit, links), PERF)
    assert r.status is Status.FAIL and "g.service" in r.message
    assert "g.service (etc/systemd/system/g.service:2) sets powersave: change it" in \
        r.remediation.manual


def test_scaling_driver_is_read_once_other_files_per_policy(make_root) -> None:
    # cpufreq.c show_scaling_driver prints the one global cpufreq_driver's name
    from aiaudit.checks.legacy_cpu import cpufreq_state

    host = Host(str(_intel(make_root, lambda c: "performance")), live=True)
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


NO_CMDLINE = ("no kernel command line in boot/loader/entries/*.conf, boot/grub/grub.cfg, "
              "boot/grub2/grub.cfg, boot/efi/EFI/debian/grub.cfg, etc/kernel/cmdline, "
              "etc/default/grub, etc/default/grub.d/*.cfg")


def test_governor_offline_nothing_set_names_what_was_looked_for(make_root) -> None:
    """Nothing sets the governor and no kernel config says the default: the failure's
    evidence is a default naming every mechanism looked at and why the default is unknown."""
    (r,) = run_check("cpu.governor", make_root({}), PERF)
    assert r.status is Status.FAIL
    assert r.message == ("scaling governor at boot: not set (kernel default unknown); nothing "
                         "makes it one of performance")
    [ev] = r.evidence
    assert (ev.kind, ev.path, ev.value) == ("default", None,
                                            "kernel default unknown: no boot/config-*")
    assert ev.source == (f"scaling governor at boot: no cpufreq.default_governor= "
                         f"({NO_CMDLINE}); cpupower.service not enabled; no enabled unit "
                         "writing scaling_governor or running cpupower frequency-set -g; no "
                         "tuned [cpu] governor (tuned not enabled)")
    # a command line and a kernel config without the choice: both named
    files = {"/etc/kernel/cmdline": "root=/dev/x ro\n", "/boot/config-6.1.0": "CONFIG_X=y\n",
             **TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/p/tuned.conf": "[cpu]\nforce_latency=1\n"}
    (r,) = run_check("cpu.governor", make_root(files, TUNED_LINK), PERF)
    [ev] = r.evidence
    assert "no cpufreq.default_governor= on etc/kernel/cmdline:1;" in ev.source
    assert ev.source.endswith("; no [cpu] governor in tuned profile p")
    assert ev.value == ("kernel default unknown: boot/config-6.1.0 has no "
                        "CONFIG_CPU_FREQ_DEFAULT_GOV_*=y")


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
