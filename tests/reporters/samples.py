"""Fixed RunResults for reporter tests: an empty run and a mixed run (pass, fail, skip,
error, waived), with fixed ids and timestamps so renderings can be compared to golden
files.  The mixed run has awkward text on purpose: quotes, backslashes, a line feed and
non-ASCII in subjects and values."""

from __future__ import annotations

from dataclasses import replace

from aiaudit.core.model import (
    Aspect,
    Evidence,
    Finding,
    HostInfo,
    Remediation,
    Result,
    RuleInfo,
    RunResult,
    Severity,
    Snippet,
    Status,
    Waiver,
)

HOST = HostInfo(hostname="gpu-node-01", machine_id="0123456789abcdef0123456789abcdef",
                os_name="Debian GNU/Linux 12 (bookworm)", os_version="12", os_id="debian",
                kernel="6.1.0-18-amd64", root="/", mode="live",
                product_uuid="4c4c4544-0042-3510-8052-b4c04f384d32", image_id=None)

RULES = (
    RuleInfo("SYSCTL-VM-SWAPPINESS", "kernel.sysctl", Severity.MEDIUM,
             "Swappiness is low", "Swapping stalls the GPU pipeline.",
             ("https://docs.kernel.org/admin-guide/sysctl/vm.html#swappiness",),
             ("performance", "sysctl")),
    RuleInfo("SYSCTL-VM-MAX-MAP-COUNT", "kernel.sysctl", Severity.MEDIUM,
             "Enough memory mappings", "mmap fails with ENOMEM at the default.",
             ("https://docs.kernel.org/admin-guide/sysctl/vm.html#max-map-count",),
             ("performance", "memory")),
    RuleInfo("BLOCK-NVME-SCHEDULER", "block.scheduler", Severity.HIGH,
             "NVMe devices use no I/O scheduler", "A scheduler adds latency on NVMe.",
             ("https://docs.kernel.org/block/switching-sched.html",), ("performance",)),
    RuleInfo("CPU-GOVERNOR", "cpu.governor", Severity.LOW, "CPU governor is performance",
             "", (), ()),
    RuleInfo("SSHD-PERMIT-ROOT-LOGIN", "sshd.option", Severity.CRITICAL,
             "Root cannot log in with a password", "Password root logins are brute-forced.",
             ("man:sshd_config(5)",), ("security", "ssh")),
    RuleInfo("SYSCTL-KERNEL-NUMA-BALANCING", "kernel.sysctl", Severity.MEDIUM,
             "Automatic NUMA balancing is off", "Hinting faults add jitter.", (),
             ("performance",), remediation="Set kernel.numa_balancing = 0."),
)


def _f(rule: int, result: Result, waiver: Waiver | None = None) -> Finding:
    r = RULES[rule]
    return Finding(r.id, r.check, r.severity, r.title, result, waiver)


SYSCTL_DROPIN = "/etc/sysctl.d/99-zz-aiaudit.conf"

FINDINGS = (
    _f(0, Result(Status.PASS, "vm.swappiness", "vm.swappiness is 10", expected="<= 10",
                 actual="10", aspect=Aspect.RUNTIME,
                 evidence=(Evidence.runtime("/proc/sys/vm/swappiness", "10"),
                           Evidence.file("/etc/sysctl.d/10-admin.conf", 1,
                                         "vm.swappiness = 10")))),
    _f(1, Result(Status.FAIL, "vm.max_map_count",
                 "vm.max_map_count is 65530 now, but the persisted 262144 is right",
                 expected=">= 262144", actual="65530", aspect=Aspect.DRIFT,
                 evidence=(Evidence.runtime("/proc/sys/vm/max_map_count", "65530"),
                           Evidence.file("/etc/sysctl.d/60-x.conf", 2,
                                         "vm.max_map_count = 262144")),
                 remediation=Remediation(
                     "Persist vm.max_map_count = 262144 and apply it now.",
                     (Snippet.file(SYSCTL_DROPIN, "vm.max_map_count = 262144\n"),
                      Snippet.command("sysctl -w vm.max_map_count='262144'"))))),
    _f(2, Result(Status.FAIL, 'nvme0n1 "fast\\disk"',
                 "scheduler is mq-deadline;\nexpected none", expected="none",
                 actual="[mq-deadline] none", aspect=Aspect.RUNTIME,
                 evidence=(Evidence.runtime("/sys/block/nvme0n1/queue/scheduler",
                                            "[mq-deadline] none"),),
                 remediation=Remediation(
                     "Select the none scheduler with a udev rule, and now.",
                     (Snippet.file("/etc/udev/rules.d/60-aiaudit-scheduler.rules",
                                   'ACTION=="add|change", KERNEL=="nvme[0-9]*n[0-9]*", '
                                   'ATTR{queue/scheduler}="none"\n'),
                      Snippet.command("echo none > /sys/block/nvme0n1/queue/scheduler"))))),
    _f(3, Result(Status.SKIP, "cpu", "no cpufreq: this is a VM without frequency scaling")),
    _f(4, Result(Status.ERROR, "sshd", "/etc/ssh/sshd_config:7: unterminated quote",
                 evidence=(Evidence.file("/etc/ssh/sshd_config", 7, 'PermitRootLogin "yes'),))),
    _f(5, Result(Status.FAIL, "kernel.numa_balancing", "kernel.numa_balancing at boot: 1 "
                 "(kernel default 1); expected = 0 — ünïcode", expected="= 0", actual="1",
                 aspect=Aspect.PERSISTED,
                 evidence=(Evidence.default("kernel default for kernel.numa_balancing", "1"),),
                 remediation=Remediation("Persist kernel.numa_balancing = 0.", (
                     Snippet.file(SYSCTL_DROPIN, "kernel.numa_balancing = 0\n"),))),
       Waiver("SYSCTL-KERNEL-NUMA-BALANCING", "vendor tuning for this GPU box", "ops-team",
              "2099-12-31", source="waivers.yaml:3")),
)


def mixed_run() -> RunResult:
    """A live run with one result of every status."""
    return RunResult(tool_version="0.0.0-test", run_id="6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f",
                     started="2026-01-02T03:04:05Z", duration_s=1.25, host=HOST,
                     ruleset="dl-training", ruleset_version="1.0", rules=RULES,
                     findings=FINDINGS, fail_on=Severity.MEDIUM,
                     notices=("waiver for SSHD-X matched no failure (waivers.yaml:9); "
                              "remove it if stale",))


def empty_run() -> RunResult:
    """An offline run of an image with no rules selected and no results."""
    host = replace(HOST, hostname="builder", machine_id=None, product_uuid=None,
                   mode="offline", root="/mnt/image", kernel=None,
                   image_id="dl-base:2026.01", image_name="dl-base", image_version="2026.01")
    return RunResult(tool_version="0.0.0-test", run_id="00000000-0000-4000-8000-000000000000",
                     started="2026-01-02T03:04:05Z", duration_s=0.0, host=host,
                     ruleset="dl-training", ruleset_version="1.0", rules=(), findings=())


SAMPLES = {"empty": empty_run, "mixed": mixed_run}
