"""cpu.cstates: live idle states, the boot command line, tuned force_latency, cpupower."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Status
from aiaudit.linux.boot import cmdline as boot
from aiaudit.linux.cpu.idle import idle_state
from tests.checks.tuning_trees import CPU, GRUB_CFG, TUNED_ENABLED, TUNED_LINK, cpuidle
from tests.helpers import CpuTime, run_check

INTEL = [("POLL", 0), ("C1", 2), ("C1E", 10), ("C6", 170)]
P = {"max_latency_us": 10, "max_cstate": 1}
LIMITS = "intel_idle.max_cstate=1 processor.max_cstate=1"


def _root(make_root, extra=None, **kw):
    files = {**cpuidle(8, INTEL, **kw), "/proc/cmdline": "ro quiet\n"}
    files.update(extra or {})
    return make_root(files)


def test_live_fail_lists_cpus_and_states(make_root) -> None:
    root = _root(make_root, {"/boot/grub/grub.cfg": GRUB_CFG % "quiet"},
                 disabled=lambda c, s: s == "C6" and c >= 4)
    (r,) = run_check("cpu.cstates", root, P, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.RUNTIME
    assert "CPUs 0-3 can enter C6 (170 µs)" in r.message
    cmds = [s.content for s in r.remediation.snippets]
    assert any("update-grub" == c for c in cmds)
    drop = next(s for s in r.remediation.snippets if s.kind == "file")
    assert drop.path == "/etc/default/grub.d/99-aiaudit.cfg"
    assert drop.content == ('GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT '
                            f'{LIMITS}"\n')
    assert any(c.startswith("cpupower idle-set -D 10") for c in cmds)


def test_live_pass_disabled_and_persisted_by_grub(make_root) -> None:
    root = _root(make_root, {"/boot/grub/grub.cfg": GRUB_CFG % LIMITS,
                             "/proc/cmdline": f"ro {LIMITS}\n"},
                 disabled=lambda c, s: s == "C6")
    (r,) = run_check("cpu.cstates", root, P, live=True)
    assert r.status is Status.PASS, r.message
    assert "disabled in cpuidle/stateN/disable" in r.message
    assert "boot/grub/grub.cfg:2" in r.message


def test_pm_qos_resume_latency_holds(make_root) -> None:
    root = _root(make_root, {"/boot/grub/grub.cfg": GRUB_CFG % LIMITS,
                             "/proc/cmdline": f"ro {LIMITS}\n"}, qos=lambda c: "5")
    (r,) = run_check("cpu.cstates", root, P, live=True)
    assert r.status is Status.PASS and "PM QoS resume latency 5 µs" in r.message
    root = _root(make_root, qos=lambda c: "n/a" if c else "0")
    (r,) = run_check("cpu.cstates", root, P, live=True)
    assert r.status is Status.FAIL and "CPUs 0 can enter" in r.message


def test_idle_poll_and_vm_without_cpuidle(make_root) -> None:
    root = make_root({f"{CPU}/online": "0-3\n", f"{CPU}/cpuidle/current_driver": "none\n",
                      "/proc/cmdline": "ro\n"})
    (r,) = run_check("cpu.cstates", root, P, live=True)
    assert r.status is Status.SKIP and r.message.startswith("no cpuidle")
    root = make_root({f"{CPU}/online": "0-3\n", "/proc/cmdline": "ro idle=poll\n",
                      "/etc/kernel/cmdline": "ro idle=poll\n"})
    (r,) = run_check("cpu.cstates", root, P, live=True)
    assert r.status is Status.PASS and "idle=poll" in r.message


def test_drift_configured_but_not_booted(make_root) -> None:
    root = _root(make_root, {"/boot/grub/grub.cfg": GRUB_CFG % LIMITS})
    (r,) = run_check("cpu.cstates", root, P, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT
    assert "drift: /proc/cmdline has no C-state parameter" in r.message


def test_live_driver_decides_which_parameter_counts(make_root) -> None:
    files = {"/boot/grub/grub.cfg": GRUB_CFG % "processor.max_cstate=1",
             "/proc/cmdline": "ro processor.max_cstate=1\n"}
    root = _root(make_root, files, disabled=lambda c, s: s == "C6")
    (r,) = run_check("cpu.cstates", root, P, live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT
    assert "intel_idle is the driver" in r.message


def test_offline_grub_dropin_bls_kernel_install(make_root) -> None:
    grub = {"/etc/default/grub": 'GRUB_CMDLINE_LINUX_DEFAULT="quiet"\n',
            "/etc/default/grub.d/60-x.cfg":
                f'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT {LIMITS}"\n'}
    (r,) = run_check("cpu.cstates", make_root(grub), P)
    assert r.status is Status.PASS and r.aspect is Aspect.PERSISTED
    (r,) = run_check("cpu.cstates", make_root({"/etc/default/grub": "GRUB_TIMEOUT=5\n"}), P)
    assert r.status is Status.FAIL and r.aspect is Aspect.PERSISTED
    bls = {"/boot/loader/entries/a-6.8.1.conf": "title x\noptions $kernelopts\n",
           "/boot/loader/entries/a-6.10.0.conf": "title x\noptions $kernelopts $tuned_params\n",
           "/boot/grub2/grubenv": "# GRUB Environment Block\nkernelopts=root=/dev/x ro\n"
                                  "tuned_params=idle=poll\n"}
    (r,) = run_check("cpu.cstates", make_root(bls), P)
    assert r.status is Status.PASS and "boot/loader/entries/a-6.10.0.conf:2" in r.message
    bls["/boot/grub2/grubenv"] = "kernelopts=root=/dev/x ro\n"
    (r,) = run_check("cpu.cstates", make_root(bls), P)
    assert r.status is Status.FAIL
    assert r.remediation.snippets[0].content.startswith(
        f'grubby --update-kernel=ALL --args="{LIMITS}"')
    (r,) = run_check("cpu.cstates", make_root({"/etc/kernel/cmdline": "root=/dev/x ro\n"}), P)
    assert r.status is Status.FAIL
    assert any("kernel-install add" in s.content for s in r.remediation.snippets)


def test_offline_tuned_force_latency_and_cpupower_unit(make_root) -> None:
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/p/tuned.conf": "[cpu]\nforce_latency=200\n"}
    (r,) = run_check("cpu.cstates", make_root(files, TUNED_LINK), P)
    assert r.status is Status.FAIL and "force_latency=200" in r.message
    files["/etc/tuned/p/tuned.conf"] = "[cpu]\nforce_latency=3\n"
    (r,) = run_check("cpu.cstates", make_root(files, TUNED_LINK), P)
    assert r.status is Status.PASS
    unit = {"/etc/systemd/system/idle.service":
            "[Service]\nType=oneshot\nExecStart=/usr/bin/cpupower idle-set -D 2\n"}
    links = {"/etc/systemd/system/multi-user.target.wants/idle.service":
             "/etc/systemd/system/idle.service"}
    (r,) = run_check("cpu.cstates", make_root(unit, links), P)
    assert r.status is Status.PASS and "idle-set -D 2" in r.message


def test_512_cpus_10_states_reads_each_file_once(make_root) -> None:
    states = [(f"S{k}", k * 20) for k in range(10)]
    root = make_root({**cpuidle(512, states, disabled=lambda c, s: s not in ("S0",)),
                      "/proc/cmdline": "ro\n", "/etc/kernel/cmdline": "idle=poll\n"})
    host = Host(str(root), live=True)
    from aiaudit.api import CheckContext
    from aiaudit.core.plugins import registry

    spec = registry().checks["cpu.cstates"]
    with CpuTime() as t:
        (r,) = list(spec.run(CheckContext(host=host, params=P)))
    assert r.status is Status.PASS
    # disable of the 9 deep states per CPU; name + latency once (one driver); no pm_qos
    # (every deep state is disabled); a few globals
    assert host.reads <= 512 * 9 + 20 + 10
    (r2,) = list(spec.run(CheckContext(host=host, params=P)))   # second rule: memoized
    assert r2.status is Status.PASS and host.reads <= 512 * 9 + 30
    assert t.seconds < 10, f"{t.seconds:.1f} s of CPU"


def _reads_of(host: Host, check: str = "cpu.cstates"):
    """Run ``check`` on ``host`` and return (result, files opened under cpuN/)."""
    from aiaudit.api import CheckContext
    from aiaudit.core.plugins import registry

    opened: list[str] = []
    orig = host._read_regular

    def spy(path: str, real: str, limit: int) -> bytes:
        opened.append(path)
        return orig(path, real, limit)

    host._read_regular = spy  # type: ignore[method-assign]
    (r,) = list(registry().checks[check].run(CheckContext(host=host, params=P)))
    return r, [o for o in opened if o.startswith(f"{CPU}/cpu") and "/cpu/cpu" in o]


def test_one_driver_reads_names_and_latencies_once(make_root) -> None:
    # drivers/cpuidle/sysfs.c: name/latency show the driver's table, disable the CPU's own
    root = make_root({**cpuidle(4, INTEL, disabled=lambda c, s: s == "C6" and c != 2),
                      "/proc/cmdline": "ro\n"})
    r, opened = _reads_of(Host(str(root), live=True))
    assert r.status is Status.FAIL and "CPUs 2 can enter C6 (170 µs)" in r.message
    assert [o for o in opened if o.endswith(("/latency", "/name"))] == [
        f"{CPU}/cpu0/cpuidle/state{k}/{f}" for k in range(4) for f in ("latency", "name")]
    # per CPU: disable of the one deep state; pm_qos only where a deep state is enabled
    assert sorted(o for o in opened if o.endswith("/disable")) == [
        f"{CPU}/cpu{c}/cpuidle/state3/disable" for c in range(4)]
    assert [o for o in opened if "pm_qos" in o] == [
        f"{CPU}/cpu2/power/pm_qos_resume_latency_us"]


def test_cpu_without_cpuidle_is_left_out(make_root) -> None:
    files = {k: v for k, v in cpuidle(4, INTEL).items() if "/cpu1/cpuidle/" not in k}
    files["/proc/cmdline"] = "ro\n"
    (r,) = run_check("cpu.cstates", make_root(files, dirs=(f"{CPU}/cpu1/cpuidle",)), P,
                     live=True)
    assert r.status is Status.FAIL and "CPUs 0,2-3 can enter C6 (170 µs)" in r.message
    # with no deep state at all, a CPU without cpuidle is still probed and left out
    shallow = {k: v for k, v in cpuidle(3, INTEL[:3]).items() if "/cpu0/" not in k}
    shallow["/proc/cmdline"] = "ro intel_idle.max_cstate=1\n"

    state = idle_state(Host(str(make_root(shallow)), live=True), 10)
    assert [c.cpu for c in state.cpus] == [1, 2]
    (r,) = run_check("cpu.cstates", make_root(shallow), P, live=True)
    assert "limit is held (intel_idle.max_cstate=1 on /proc/cmdline)" in r.message


def test_multiple_drivers_read_every_cpu(make_root) -> None:
    # CONFIG_CPU_IDLE_MULTIPLE_DRIVERS (big.LITTLE): cpuN/cpuidle/driver/ exists and each
    # CPU's driver may have its own table, so nothing is shared between CPUs
    little = [("WFI", 1), ("cpu-sleep", 80)]
    big = [("WFI", 1), ("cluster-sleep", 900), ("cpu-sleep", 150)]
    files = {**cpuidle(2, little), "/proc/cmdline": "ro\n"}
    for c in (2, 3):
        for k, (name, lat) in enumerate(big):
            d = f"{CPU}/cpu{c}/cpuidle/state{k}"
            files.update({f"{d}/name": name + "\n", f"{d}/latency": f"{lat}\n",
                          f"{d}/disable": "0\n"})
        files[f"{CPU}/cpu{c}/power/pm_qos_resume_latency_us"] = "0\n"
    files[f"{CPU}/online"] = "0-3\n"
    for c in range(4):
        files[f"{CPU}/cpu{c}/cpuidle/driver/name"] = ("little" if c < 2 else "big") + "_idle\n"
    (r,) = run_check("cpu.cstates", make_root(files), P, live=True)
    assert r.status is Status.FAIL
    assert "CPUs 0-1 can enter cpu-sleep (80 µs)" in r.message
    assert "CPUs 2-3 can enter cluster-sleep (900 µs), cpu-sleep (150 µs)" in r.message


def test_offline_no_bootloader_config_names_what_was_looked_for(make_root) -> None:
    """No command line and nothing else limiting: the kernel default (every state usable)
    decides, and the evidence says where the command line, tuned and units were looked for."""
    (r,) = run_check("cpu.cstates", make_root({}), P)
    assert r.status is Status.FAIL
    assert r.message.startswith("the C-state limit at boot: no bootloader configuration found")
    [ev] = r.evidence
    assert (ev.kind, ev.path) == ("default", None)
    assert ev.source == ("the C-state limit at boot: no kernel command line in "
                         + ", ".join(p.lstrip("/") for p in boot.SEARCHED)
                         + "; no tuned [cpu] force_latency (tuned not enabled); no enabled "
                         "unit running cpupower idle-set -D")
    assert "boot/grub/grub.cfg" in ev.source and "etc/default/grub.d/*.cfg" in ev.source
    assert ev.value == "kernel default: every idle state the cpuidle driver registers is usable"
    # a tuned force_latency that does not limit enough: its line is evidence, not "no tuned"
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
             "/etc/tuned/p/tuned.conf": "[cpu]\nforce_latency=200\n"}
    (r,) = run_check("cpu.cstates", make_root(files, TUNED_LINK), P)
    assert [e.kind for e in r.evidence] == ["file", "default"]
    assert r.evidence[0].source == "etc/tuned/p/tuned.conf:2"
    assert "tuned" not in r.evidence[1].source


def test_offline_command_line_without_limit_is_the_evidence(make_root) -> None:
    (r,) = run_check("cpu.cstates", make_root({"/etc/default/grub": "GRUB_TIMEOUT=5\n"}), P)
    assert r.status is Status.FAIL
    assert [(e.kind, e.source) for e in r.evidence] == [("file", "etc/default/grub")]


def test_unreadable_boot_config_is_the_evidence_of_the_error(make_root) -> None:
    """A bootloader file that cannot be parsed or read makes the boot value unknown: each
    such file (it exists) is file evidence, with the line where there is one."""
    root = make_root({"/etc/default/grub": 'GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="quiet\n',
                      "/boot/grub/grub.cfg": b"#" * (4 * 1024 * 1024 + 1)})
    (r,) = run_check("cpu.cstates", root, P)
    assert r.status is Status.ERROR
    assert "etc/default/grub: line 2: unterminated double quote" in r.message
    assert [(e.kind, e.path, e.line, e.value) for e in r.evidence] == [
        ("file", "/etc/default/grub", 2, "unterminated double quote"),
        ("file", "/boot/grub/grub.cfg", None, r.evidence[1].value)]
    assert "read cap" in r.evidence[1].value and "/boot" not in r.evidence[1].value
