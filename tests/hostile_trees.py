"""Builders of hostile host trees (tests/test_hostile_runtime.py, bench/fuzz_parsers.py) and
a child-scan runner that measures the scan's peak memory.

Big files are sparse (``truncate``) or repeated text, so a tree of gigabytes costs little
disk and a fraction of a second to build.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

MIB = 1024 * 1024

RSS_BOUND_MB = 100
"""Peak resident memory a scan may reach on any hostile tree (README, "Read-only and
confined")."""


def _write(root: Path, rel: str, data: bytes | str) -> Path:
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    p.write_bytes(data)
    return p


def _sparse(root: Path, rel: str, size: int, head: bytes = b"") -> Path:
    p = _write(root, rel, head)
    with open(p, "r+b") as fh:
        fh.truncate(size)
    return p


def _base(root: Path) -> None:
    _write(root, "etc/os-release", 'ID=debian\nVERSION_ID="12"\n')
    _write(root, "etc/hostname", "hostile\n")


def kernel_modules(root: Path) -> None:
    """Kernel module files just under their read cap for several kernels: 250 MiB ``.ko``
    images (sparse, a real ``.modinfo`` at their start or none at all), ``.ko.gz`` and
    ``.ko.xz`` that inflate to 64 MiB with ``.modinfo`` before the padding, and an rpm
    database just under its 32 MiB cap (a 2.9 GB peak before)."""
    import gzip
    import lzma

    from tests.linux.kmod.test_modinfo import make_ko

    _base(root)
    ko = make_ko("550.54.14", extra=b"\0" * (64 * MIB))
    gz, xz = gzip.compress(ko, 1), lzma.compress(ko, preset=0)
    for k in ("6.1.0-1", "6.1.0-2", "6.1.0-3"):
        base = f"lib/modules/{k}/kernel/drivers/video"
        _sparse(root, f"{base}/nvidia.ko", 250 * MIB, b"\x7fELF\x02\x01\x01" + b"\0" * 57)
        _sparse(root, f"{base}/nvidia/nvidia.ko", 250 * MIB, make_ko(None))
        _write(root, f"{base}/nv/nvidia.ko.gz", gz[:len(gz) // 2])  # truncated
        _write(root, f"{base}/nvx/nvidia.ko.xz", xz)
    _sparse(root, "var/lib/rpm/rpmdb.sqlite", 31 * MIB, b"SQLite format 3\0" + b"\0" * 84)


def files_at_cap(root: Path, count: int = 40, size: int = 4 * MIB - 1) -> None:
    """Many configuration files each just under the 4 MiB read cap, of plain comment
    lines, in every drop-in directory a rule reads (988 MB before)."""
    _base(root)
    line = b"# " + b"x" * 61 + b"\n"
    body = line * (size // len(line))
    for d in ("etc/sysctl.d", "usr/lib/sysctl.d", "etc/security/limits.d",
              "etc/ssh/sshd_config.d", "etc/udev/rules.d", "etc/modprobe.d"):
        for i in range(count // 4):
            _write(root, f"{d}/{i:03d}.conf" if "udev" not in d else f"{d}/{i:03d}.rules",
                   body)
    for f in ("etc/sysctl.conf", "etc/security/limits.conf", "etc/ssh/sshd_config",
              "etc/fstab", "etc/default/grub", "var/lib/dpkg/status", "etc/passwd",
              "etc/pam.d/sshd", "etc/pam.d/common-session"):
        _write(root, f, body)


def open_fds(root: Path, count: int = 3_000, per: int = 3) -> None:
    """A live tree of ``count`` open file descriptors over ``count // per`` processes,
    every one of them the one listening socket (668 MB for 200,000 before: every holder
    was read and listed).  The test builds few: a symlink costs up to a millisecond on a
    busy machine; the README's figure is for 200,000."""
    _base(root)
    _write(root, "proc/net/tcp",
           "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt"
           "   uid  timeout inode\n"
           "   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000"
           "     0        0 4242 1 0000000000000000 100 0 0 10 0\n")
    for p in range((count + per - 1) // per):
        fd = root / f"proc/{100 + p}/fd"
        fd.mkdir(parents=True)
        _write(root, f"proc/{100 + p}/comm", "hog\n")
        _write(root, f"proc/{100 + p}/cmdline", "hog\0" + "x" * 65536)
        for i in range(min(per, count - p * per)):
            os.symlink("socket:[4242]", fd / str(i))


def sysctl_globs(root: Path, count: int = 50_000) -> None:
    """A sysctl.d file of ``count`` distinct globs that all match ``vm.swappiness``, with
    literal exclusions of other keys between them: every glob must be checked against the
    exclusions (quadratic before: past 60 s), and no two patterns are the same (fnmatch's
    pattern cache recompiled each one on every call)."""
    _base(root)
    name = "swappiness"
    pats: list[str] = []
    for mask in range(1 << len(name)):
        chars = ["?" if mask >> j & 1 else c for j, c in enumerate(name)]
        for pos in range(len(name) + 1):
            for stars in range(1, 6):
                pats.append("".join(chars[:pos]) + "*" * stars + "".join(chars[pos:]))
                if len(pats) == count:
                    break
            if len(pats) == count:
                break
        if len(pats) == count:
            break
    lines = [f"-vm.other{i}" if i % 10 == 0 else f"vm.{p} = {i % 100}"
             for i, p in enumerate(pats)]
    _write(root, "etc/sysctl.d/50-globs.conf", "\n".join(lines) + "\n")
    _write(root, "proc/sys/vm/swappiness", "10\n")
    _write(root, "proc/sys/vm/max_map_count", "65530\n")


HUGE = "9" * 5000
"""A 5,000-digit number (over Python's 4,300-digit ``int()`` limit)."""


def hugenum(root: Path) -> None:
    """Every numeric field of every configuration and kernel-state file a rule reads gets a
    5,000-digit number ("internal error in check" in 23 rules before)."""
    n = HUGE
    _base(root)
    files = {
        "etc/sysctl.d/99-huge.conf": "".join(f"{k} = {n}\n" for k in (
            "vm.swappiness", "vm.max_map_count", "kernel.numa_balancing",
            "net.core.somaxconn", "net.core.rmem_max", "net.core.wmem_max",
            "kernel.shmmax", "vm.overcommit_memory", "net.ipv4.tcp_rmem")),
        "etc/security/limits.conf": f"* soft memlock {n}\n* hard nofile {n}\n"
                                    f"* soft nproc {n}\n* - stack {n}\n",
        "etc/ssh/sshd_config": f"Port {n}\nMaxAuthTries {n}\nLoginGraceTime {n}\n"
                               f"ClientAliveInterval {n}\nMaxStartups {n}:{n}:{n}\n",
        "etc/fstab": f"tmpfs /dev/shm tmpfs size={n},mode=1777 0 0\n",
        "etc/default/grub": f'GRUB_CMDLINE_LINUX="hugepages={n} transparent_hugepage=never '
                            f'intel_idle.max_cstate={n} processor.max_cstate={n}"\n',
        "boot/grub/grub.cfg": f"linux /vmlinuz root=/dev/sda1 hugepages={n} "
                              f"intel_idle.max_cstate={n}\n",
        "etc/udev/rules.d/60-io.rules": f'ACTION=="add", KERNEL=="nvme*", '
                                        f'ATTR{{queue/read_ahead_kb}}="{n}"\n',
        "etc/slurm/slurm.conf": f"MaxMemPerNode={n}\nDefMemPerCPU={n}\n",
        "etc/systemd/system.conf": f"[Manager]\nDefaultLimitMEMLOCK={n}\n"
                                   f"DefaultLimitNOFILE={n}:{n}\n",
        "etc/systemd/system/slurmd.service": f"[Service]\nLimitMEMLOCK={n}\n"
                                             f"LimitNOFILE={n}\n",
        "etc/passwd": f"root:x:0:0:root:/root:/bin/bash\nalice:x:{n}:{n}::/home/a:/bin/sh\n",
        "etc/group": f"root:x:0:\nalice:x:{n}:\n",
        "usr/local/cuda/version.json": json.dumps({"cuda": {"version": f"{n}.{n}"}}),
        "usr/local/cuda/version.txt": f"CUDA Version {n}.{n}.{n}\n",
        "etc/tuned/active_profile": "hugenum\n",
        "etc/tuned/hugenum/tuned.conf": f"[sysctl]\nvm.swappiness={n}\n[vm]\n"
                                        f"transparent_hugepages=never\n",
        "etc/nftables.conf": f"table inet f {{ chain in {{ type filter hook input priority {n};"
                             f" policy drop; tcp dport {n} accept; }} }}\n",
        "etc/default/ufw": "IPV6=yes\nDEFAULT_INPUT_POLICY=\"DROP\"\n",
        "etc/ufw/user.rules": f"### tuple ### allow tcp {n} 0.0.0.0/0 any 0.0.0.0/0 in\n"
                              f"-A ufw-user-input -p tcp --dport {n} -j ACCEPT\n",
        "etc/firewalld/zones/public.xml": f'<zone target="DROP"><port protocol="tcp" '
                                          f'port="{n}"/></zone>\n',
        "proc/meminfo": f"MemTotal: {n} kB\nSwapTotal: {n} kB\nHugePages_Total: {n}\n",
        "proc/cmdline": f"BOOT_IMAGE=/vmlinuz hugepages={n} intel_idle.max_cstate={n}\n",
        "proc/mounts": f"tmpfs /dev/shm tmpfs rw,size={n}k 0 0\n",
        "proc/swaps": f"Filename Type Size Used Priority\n/swap file {n} {n} -2\n",
        "proc/net/tcp": "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
                        "retrnsmt   uid  timeout inode\n"
                        f"   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 "
                        f"00000000     {n}        0 {n} 1 0000000000000000 100 0 0 10 0\n",
        "proc/1/limits": f"Limit Soft Limit Hard Limit Units\nMax locked memory {n} {n} "
                         f"bytes\nMax open files {n} {n} files\n",
        "proc/driver/nvidia/version": f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  "
                                      f"{n}.{n}  Tue\n",
        "sys/module/nvidia/version": f"{n}.{n}\n",
        "sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
        "sys/block/nvme0n1/queue/read_ahead_kb": f"{n}\n",
        "sys/block/nvme0n1/queue/scheduler": "[none] mq-deadline\n",
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
        "sys/devices/system/cpu/cpu0/cpuidle/state1/latency": f"{n}\n",
        "sys/devices/system/cpu/cpu0/cpuidle/state1/disable": f"{n}\n",
        "sys/devices/system/cpu/cpu0/cpuidle/state1/name": "C1\n",
        "sys/devices/system/cpu/online": f"0-{n}\n",
        "sys/devices/system/cpu/cpufreq/boost": f"{n}\n",
    }
    for key in ("vm/swappiness", "vm/max_map_count", "kernel/numa_balancing",
                "net/core/somaxconn", "net/core/rmem_max", "kernel/shmmax",
                "vm/overcommit_memory"):
        files[f"proc/sys/{key}"] = f"{n}\n"
    files["proc/sys/net/ipv4/tcp_rmem"] = f"{n}\t{n}\t{n}\n"
    for rel, text in files.items():
        _write(root, rel, text)


TREES: dict[str, tuple[Callable[[Path], None], tuple[str, ...]]] = {
    "kernel-modules": (kernel_modules, ("--offline",)),
    "files-at-cap": (files_at_cap, ("--offline",)),
    "open-fds": (open_fds, ("--live",)),
    "sysctl-globs": (sysctl_globs, ("--live",)),
    "hugenum": (hugenum, ("--live",)),
}
"""Name -> (builder, scan mode)."""


@dataclass
class ChildScan:
    """A scan run as a child process, with its peak memory."""

    returncode: int
    stdout: str
    stderr: str
    maxrss_mb: float
    """Peak resident set of the scan (and the processes it waited for), in MiB."""
    seconds: float
    """Wall time: only for checks that a deadline stopped something (generous bounds)."""
    cpu_seconds: float
    """CPU time (user + system) of the scan and the processes it waited for: what a cost
    bound compares, stable on a loaded machine where wall time is not."""

    def report(self) -> dict:
        """The JSON report on stdout."""
        return json.loads(self.stdout)


_WRAPPER = """
import json, resource, subprocess, sys, time
t = time.monotonic()
p = subprocess.run(sys.argv[1:], capture_output=True)
took = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stdout.buffer.write(json.dumps({"rc": p.returncode, "rss": ru.ru_maxrss, "s": took,
                                    "cpu": ru.ru_utime + ru.ru_stime,
                                    "out": p.stdout.decode("utf-8", "replace"),
                                    "err": p.stderr.decode("utf-8", "replace")}).encode())
"""


def child_scan(*args: str, env: dict[str, str] | None = None,
               timeout: float = 120) -> ChildScan:
    """``aiaudit ARGS`` in a child process, measured by a wrapper process whose only
    child it is (``RUSAGE_CHILDREN`` of the wrapper is the scan's own peak; a process's
    own ``ru_maxrss`` would include the memory of the test process it was forked from,
    which Linux carries across ``exec``)."""
    return child_run([sys.executable, "-m", "aiaudit", *args], env=env, timeout=timeout)


def child_run(argv: list[str], env: dict[str, str] | None = None,
              timeout: float = 120) -> ChildScan:
    """Any command, measured as :func:`child_scan` measures a scan."""
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    got = json.loads(proc.stdout)
    return ChildScan(got["rc"], got["out"], got["err"], got["rss"] / 1024, got["s"], got["cpu"])
