"""cpu.governor: live policies, kernel default, cpupower.service, units, tuned."""

from __future__ import annotations

from aiaudit.core.model import Aspect, Status
from tests.checks.tuning_trees import CPU, TUNED_ENABLED, TUNED_LINK, intel
from tests.helpers import run_check

PERF = {"governors": ["performance"]}
SOCK0 = lambda c: (c % 64) < 32  # noqa: E731


def test_governor_live_fail_lists_cpus_compactly_with_driver(make_root) -> None:
    root = intel(make_root, lambda c: "powersave" if SOCK0(c) else "performance")
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
    root = intel(make_root, lambda c: "performance", extra=extra, links=links)
    (r,) = run_check("cpu.governor", root, PERF, live=True)
    assert r.status is Status.PASS and "etc/sysconfig/cpupower:1" in r.message
    # the same config without the service enabled does not count
    root = intel(make_root, lambda c: "performance", extra=extra)
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


def test_governor_remediation_names_the_wrong_boot_setting(make_root) -> None:
    unit = {"/etc/systemd/system/g.service":
            "[Service]\nExecStart=/usr/bin/cpupower frequency-set --governor=powersave\n"}
    links = {"/etc/systemd/system/multi-user.target.wants/g.service":
             "/etc/systemd/system/g.service"}
    (r,) = run_check("cpu.governor", make_root(unit, links), PERF)
    assert r.status is Status.FAIL and "g.service" in r.message
    assert "g.service (etc/systemd/system/g.service:2) sets powersave: change it" in \
        r.remediation.manual


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



def test_governor_right_by_kernel_default_is_applied_not_persisted(make_root) -> None:
    """The kernel that boots defaults to performance (nothing sets another): a powersave
    CPU now is fixed by applying the boot value, with no unit to install (issue 30)."""
    cfg = {"/boot/config-6.1.0": "CONFIG_CPU_FREQ_DEFAULT_GOV_PERFORMANCE=y\n"}
    root = intel(make_root, lambda c: "powersave" if SOCK0(c) else "performance", extra=cfg)
    (r,) = run_check("cpu.governor", root, PERF, live=True)
    assert r.status is Status.FAIL
    assert [s.kind for s in r.remediation.snippets] == ["command"]
    assert r.remediation.snippets[0].content.startswith("cpupower frequency-set -g performance")
    assert "already right" in r.remediation.summary


def test_image_fix_has_no_command_for_the_machine_that_pastes_it(make_root) -> None:
    """Scanning an image offline, the fix is the unit only: an "apply now" command would
    change the governor of whatever machine the block is pasted on."""
    files = {"/boot/config-6.1.0": "CONFIG_CPU_FREQ_DEFAULT_GOV_SCHEDUTIL=y\n",
             "/usr/lib/systemd/systemd": "", "/etc/default/grub": "GRUB_TIMEOUT=5\n"}
    (r,) = run_check("cpu.governor", make_root(files), PERF)
    assert r.status is Status.FAIL
    assert [s.kind for s in r.remediation.snippets] == ["file", "enable"]
    assert " now" not in r.remediation.summary
