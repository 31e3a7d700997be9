#!/usr/bin/env python3
"""Benchmark: wall time and peak memory of ``aiaudit scan`` against ``python3 -c pass``.

Measures, in one run and on the same machine, the median wall time (and peak RSS) of:
- ``python -c pass`` (the interpreter's own start-up: the unit of the ratios), with the
  interpreter that runs the ``aiaudit`` being measured;
- ``aiaudit scan --ruleset dl-training`` with ``--format json`` and ``--format text``, on
  this host live, on a small fixture root and on a large generated root (512 CPUs with 10
  idle states each, 64 NVMe namespaces, 200 sysctl.d files), the fixture roots scanned live
  (``--live``) so the /sys and /proc parts are exercised.

Targets (issue 8): JSON <= 6x python start-up, text <= 10x, large <= 1.5x small, peak
memory <= 40 MB.  Measure a real installation (``pip install .``), not an editable one: an
editable install adds an import hook to every start-up of its interpreter (the script says
so when it finds one).  Usage::

    python3 -m venv /tmp/bench-venv && /tmp/bench-venv/bin/pip install -q .
    python3 bench/bench.py --aiaudit /tmp/bench-venv/bin/aiaudit [--runs 15] [--json F] [--check]

``--check`` exits 1 when a target is missed.  This is a script, not a timed test.

``--scale`` measures instead how the sysctl and sshd rules grow with the size of the
configuration (issue 20): offline roots with 20 / 200 / 2,000 sysctl.d files and 10 / 100 /
1,000 sshd ``Include`` files, every rule of the family (20 sysctl, 14 SSH rules of
dl-training) against one rule of it.  Target: all rules cost at most 1.3x one rule at every
size (the configuration is resolved once per run and shared).  With ``--callgrind`` the
figure compared is the instruction count (``valgrind --tool=callgrind``: stable on a busy
machine), else the median wall time::

    python3 bench/bench.py --scale --callgrind [--sizes 0,1,2] [--json F] [--check]

``--instructions`` prints the instruction counts (callgrind) and peak RSS of the scans users
run on this host: live JSON and text, one rule (start-up), a site ruleset that extends
dl-training, a ``--state`` run (the SIEM timer), a small offline root and the prolog::

    python3 bench/bench.py --instructions --aiaudit /tmp/bench-venv/bin/aiaudit [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def bench_env() -> dict[str, str]:
    """The environment of every measured command: no colour, and bytecode caching on (as
    for any installed package: pip writes .pyc files at install time), whatever the
    calling shell says (PYTHONDONTWRITEBYTECODE would make every run recompile)."""
    env = dict(os.environ, NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


OK_CODES = (0, 1, 3)
"""Exit codes of a scan that ran (pass, failures, could not evaluate); 2 and 4 mean the
command did not do what is measured."""


def measure(argv: list[str], runs: int, cwd: str) -> dict[str, float]:
    """Median/p90 wall seconds and max peak RSS (MB) of ``argv`` over ``runs`` runs, run in
    ``cwd`` (not the checkout: ``python -c`` would import the source tree from there).
    Exits with a message when a run fails: a failed command is fast, not a figure."""
    walls, rss = [], []
    env = bench_env()
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - t0)
        rss.append(usage.ru_maxrss / 1024)  # KiB on Linux
        code = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        if code not in OK_CODES:
            raise SystemExit(f"bench: {' '.join(argv)[:200]} exited {code}:\n{err[-2000:]}")
    walls.sort()
    return {"median_s": statistics.median(walls),
            "p90_s": walls[min(len(walls) - 1, int(len(walls) * 0.9))],
            "peak_rss_mb": max(rss)}


IMPORT_DEPS = ("import argparse, json, dataclasses, typing, threading, subprocess, fnmatch, "
               "ipaddress, signal, pluggy")
"""The standard library and dependencies every scan imports, whatever aiaudit does."""
IMPORT_ALL = ("import aiaudit.cli, aiaudit.core.scan, aiaudit.reporters.json\n"
              "from aiaudit.core.plugins import builtin_modules\n"
              "builtin_modules()")
"""Everything a dl-training scan imports before its first rule runs."""


def interpreter_of(exe: str) -> str:
    """The Python that runs the ``aiaudit`` console script ``exe`` (its ``#!`` line): the
    baseline must be the same interpreter with the same site-packages (``.pth`` files run at
    every start-up)."""
    try:
        with open(exe, "rb") as fh:
            first = fh.readline().decode().strip()
    except OSError:
        return sys.executable
    return first[2:].split()[0] if first.startswith("#!") else sys.executable


def is_editable(python: str) -> bool:
    """Whether aiaudit is installed editable (``pip install -e``) for ``python``: its import
    hook then runs at every start-up of that interpreter (about 10 ms here), in the
    baseline as in the scan, so the ratios are not those of a real installation."""
    probe = "import sys; print(any('__editable__' in m for m in sys.modules))"
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False)
    return out.stdout.strip() == "True"


def _w(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def make_host(root: Path, cpus: int, cstates: int, nvme: int, sysctl_files: int) -> Path:
    """A synthetic live host tree (sysfs/procfs layout as on a real machine)."""
    cpu = "sys/devices/system/cpu"
    _w(root, f"{cpu}/online", f"0-{cpus - 1}\n")
    _w(root, f"{cpu}/present", f"0-{cpus - 1}\n")
    _w(root, f"{cpu}/possible", f"0-{cpus - 1}\n")
    _w(root, f"{cpu}/cpuidle/current_driver", "intel_idle\n")
    _w(root, f"{cpu}/intel_pstate/status", "active\n")
    _w(root, f"{cpu}/intel_pstate/no_turbo", "0\n")
    lat = [0, 2, 10, 40, 133, 200, 290, 400, 600, 1000]
    for c in range(cpus):
        pol = f"{cpu}/cpufreq/policy{c}"
        _w(root, f"{pol}/scaling_driver", "intel_pstate\n")
        _w(root, f"{pol}/scaling_governor", "powersave\n")
        _w(root, f"{pol}/energy_performance_preference", "balance_performance\n")
        _w(root, f"{pol}/affected_cpus", f"{c}\n")
        _w(root, f"{pol}/related_cpus", f"{c}\n")
        _w(root, f"{pol}/scaling_min_freq", "800000\n")
        _w(root, f"{pol}/scaling_max_freq", "3800000\n")
        _w(root, f"{pol}/cpuinfo_min_freq", "800000\n")
        _w(root, f"{pol}/cpuinfo_max_freq", "3800000\n")
        cdir = root / cpu / f"cpu{c}"
        cdir.mkdir(parents=True, exist_ok=True)
        os.symlink(f"../cpufreq/policy{c}", cdir / "cpufreq")
        _w(root, f"{cpu}/cpu{c}/online", "1\n")
        _w(root, f"{cpu}/cpu{c}/power/pm_qos_resume_latency_us", "0\n")
        for s in range(cstates):
            st = f"{cpu}/cpu{c}/cpuidle/state{s}"
            _w(root, f"{st}/name", "POLL\n" if s == 0 else f"C{s}\n")
            _w(root, f"{st}/desc", f"state {s}\n")
            _w(root, f"{st}/latency", f"{lat[s % len(lat)]}\n")
            _w(root, f"{st}/residency", f"{lat[s % len(lat)] * 3}\n")
            _w(root, f"{st}/disable", "0\n")
    for n in range(nvme):
        dev = f"sys/devices/pci0000:00/0000:00:{n % 32:02x}.0/nvme/nvme{n}/nvme{n}n1"
        _w(root, f"{dev}/queue/scheduler", "[none] mq-deadline kyber bfq\n")
        _w(root, f"{dev}/queue/rotational", "0\n")
        _w(root, f"{dev}/queue/read_ahead_kb", "128\n")
        _w(root, f"{dev}/hidden", "0\n")
        _w(root, f"{dev}/nvme{n}n1p1/partition", "1\n")
        (root / "sys/block").mkdir(parents=True, exist_ok=True)
        os.symlink(f"../{dev[len('sys/'):]}", root / f"sys/block/nvme{n}n1")
    keys = ["vm.swappiness", "vm.max_map_count", "net.core.rmem_max", "net.core.wmem_max",
            "vm.dirty_background_ratio", "net.ipv4.tcp_fin_timeout"]
    for i in range(sysctl_files):
        lines = [f"# generated file {i}"]
        lines += [f"net.ipv4.conf.eth{i}.rp_filter = 1", f"kernel.sched_x{i} = {i}"]
        if i % 40 == 0:
            lines += [f"{k} = {10 + i}" for k in keys]
        _w(root, f"etc/sysctl.d/{i:03d}-bench.conf", "\n".join(lines) + "\n")
    proc = {
        "vm/swappiness": "10", "vm/max_map_count": "1048576", "net/core/rmem_max": "67108864",
        "net/core/wmem_max": "67108864", "vm/dirty_background_ratio": "5",
        "vm/dirty_ratio": "20", "net/ipv4/tcp_rmem": "4096\t87380\t67108864",
        "net/ipv4/tcp_wmem": "4096\t65536\t67108864", "net/ipv4/tcp_fin_timeout": "30",
        "net/ipv4/tcp_tw_reuse": "1", "kernel/numa_balancing": "0",
        "net/ipv4/tcp_slow_start_after_idle": "0", "net/ipv4/tcp_mtu_probing": "1",
        "net/core/somaxconn": "4096", "kernel/randomize_va_space": "2",
        "fs/protected_symlinks": "1", "fs/protected_hardlinks": "1", "fs/suid_dumpable": "0",
        "kernel/kptr_restrict": "1", "kernel/dmesg_restrict": "1", "fs/nr_open": "1048576",
        "kernel/hostname": "bench-host", "kernel/osrelease": "6.1.0-bench",
    }
    for k, v in proc.items():
        _w(root, f"proc/sys/{k}", v + "\n")
    _w(root, "proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n")
    _w(root, "proc/meminfo", "MemTotal:       527843328 kB\nSwapTotal:             0 kB\n")
    _w(root, "proc/mounts", "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n")
    _w(root, "proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n")
    _w(root, "etc/hostname", "bench-host\n")
    _w(root, "etc/os-release", 'ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian 12"\n')
    _w(root, "etc/machine-id", "0123456789abcdef0123456789abcdef\n")
    return root


SSHD_MAIN = """\
# Debian 12's stock sshd_config, active lines
Include /etc/ssh/sshd_config.d/*.conf
KbdInteractiveAuthentication no
UsePAM yes
X11Forwarding yes
PrintMotd no
AcceptEnv LANG LC_*
Subsystem\tsftp\t/usr/lib/openssh/sftp-server
"""


def make_sysctl_root(root: Path, files: int) -> Path:
    """An offline root with ``files`` sysctl.d files spread over /etc, /run and /usr/lib
    (same basenames shadowing each other), one glob and one exclusion, and the keys of the
    dl-training rules set (and overridden) in every 40th file."""
    keys = ["vm.swappiness", "vm.max_map_count", "net.core.rmem_max", "net.core.wmem_max",
            "vm.dirty_background_ratio", "net.ipv4.tcp_fin_timeout", "kernel.kptr_restrict"]
    dirs = ("usr/lib/sysctl.d", "etc/sysctl.d", "run/sysctl.d")
    for i in range(files):
        lines = [f"# generated file {i}", f"net.ipv4.conf.eth{i}.rp_filter = 1",
                 f"kernel.sched_x{i} = {i}", f"-net.ipv6.conf.eth{i}.accept_ra"]
        if i % 40 == 0:
            lines += [f"{k} = {10 + i}" for k in keys]
        if i == files // 2:
            lines += ["net.ipv4.conf.*.rp_filter = 2", "-net.ipv4.conf.lo.rp_filter"]
        _w(root, f"{dirs[i % 3]}/{i:04d}-bench.conf", "\n".join(lines) + "\n")
    _w(root, "etc/sysctl.conf", "# empty, as on Debian\n")
    _w(root, "etc/os-release", 'ID=debian\nVERSION_ID="12"\n')
    return root


def make_sshd_root(root: Path, includes: int) -> Path:
    """An offline root with Debian's sshd_config and ``includes`` files in
    sshd_config.d: each sets a few keywords (the first value read wins), every 25th opens a
    ``Match`` block that overrides one of the rules' keywords."""
    _w(root, "etc/ssh/sshd_config", SSHD_MAIN)
    for i in range(includes):
        lines = [f"# drop-in {i}", f"AcceptEnv BENCH_{i}_*", f"ClientAliveInterval {300 + i}",
                 f"MaxAuthTries {3 + i % 3}", f"PermitRootLogin {'no' if i % 2 else 'yes'}"]
        if i % 25 == 0:
            lines += [f"Match User bench{i},svc{i} Address 10.{i % 250}.0.0/16",
                      "    X11Forwarding no", f"    PermitRootLogin {'no' if i else 'yes'}",
                      "    PasswordAuthentication no"]
        _w(root, f"etc/ssh/sshd_config.d/{i:04d}-bench.conf", "\n".join(lines) + "\n")
    _w(root, "etc/os-release", 'ID=debian\nVERSION_ID="12"\n')
    return root


def rule_ids(prefix: str) -> list[str]:
    """The dl-training rules whose id starts with ``prefix``, in ruleset order."""
    data = json.loads((REPO / "rulesets" / "dl-training.json").read_text())
    return [r["id"] for r in data["data"]["rules"] if str(r["id"]).startswith(prefix)]


def callgrind(argv: list[str], cwd: str) -> int:
    """Instructions executed by ``argv`` (all processes it starts), from callgrind."""
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          *argv], capture_output=True, text=True, env=bench_env(), cwd=cwd,
                         check=False)
    if out.returncode not in OK_CODES or "Traceback (most recent call last)" in out.stderr:
        raise SystemExit(f"bench: {' '.join(argv)[:200]} exited {out.returncode}:\n"
                         f"{out.stderr[-2000:]}")
    for line in out.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    raise SystemExit(f"bench: no instruction count from callgrind:\n{out.stderr[-2000:]}")


SCALE_SIZES = ((20, 10), (200, 100), (2000, 1000))
"""(sysctl.d files, sshd Include files) of the scale mode's roots."""


def scale(args: argparse.Namespace, exe: str) -> int:
    """``--scale``: all rules of a family against one rule, at each configuration size."""
    families = {"sysctl": rule_ids("SYSCTL-"), "sshd": rule_ids("SSH-")}
    tmp = Path(tempfile.mkdtemp(prefix="aiaudit-bench-scale-"))
    unit = "Minstr" if args.callgrind else "ms"
    rows: list[dict[str, object]] = []
    try:
        for idx in [int(x) for x in args.sizes.split(",")]:
            n_sysctl, n_sshd = SCALE_SIZES[idx]
            roots = {"sysctl": (n_sysctl, make_sysctl_root(tmp / f"sysctl{n_sysctl}", n_sysctl)),
                     "sshd": (n_sshd, make_sshd_root(tmp / f"sshd{n_sshd}", n_sshd))}
            for fam, (size, root) in roots.items():
                ids = families[fam]
                # deadlines far away: under valgrind a rule runs ~50x slower, and a rule
                # abandoned at its deadline is work measured twice
                base = [exe, "scan", "--ruleset", "dl-training", "--root", str(root),
                        "--format", "json", "--timeout", "3600", "--rule-timeout", "3600",
                        "--only"]
                figures = {}
                for label, only in (("one", ids[:1]), ("all", ids)):
                    argv = [*base, *only]
                    measure(argv, 1, str(tmp))  # warm the page cache and .pyc files
                    if args.callgrind:
                        figures[label] = callgrind(argv, str(tmp)) / 1e6
                        figures[f"{label}_rss_mb"] = measure(argv, 1, str(tmp))["peak_rss_mb"]
                    else:
                        m = measure(argv, args.runs, str(tmp))
                        figures[label] = m["median_s"] * 1000
                        figures[f"{label}_rss_mb"] = m["peak_rss_mb"]
                row = {"family": fam, "size": size, "rules": len(ids), "unit": unit,
                       **figures, "ratio": figures["all"] / figures["one"]}
                rows.append(row)
                print(f"{fam:<7} {size:>5} files  one {figures['one']:>9.1f} {unit}  "
                      f"all({len(ids)}) {figures['all']:>9.1f} {unit}  "
                      f"ratio {row['ratio']:.2f}  peak {figures['all_rss_mb']:.1f} MB",
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    worst = max(float(r["ratio"]) for r in rows)  # type: ignore[arg-type]
    rss = max(max(float(r["one_rss_mb"]), float(r["all_rss_mb"]))  # type: ignore[arg-type]
              for r in rows)
    print(f"\nall_vs_one (<= 1.3)        {worst:8.2f}  {'ok' if worst <= 1.3 else 'MISSED'}")
    print(f"peak_rss_mb (<= 40)        {rss:8.2f}  {'ok' if rss <= 40 else 'MISSED'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"scale": rows, "aiaudit": exe}, indent=2))
    return 0 if (worst <= 1.3 and rss <= 40) or not args.check else 1


SITE_RULESET = """\
ruleset: bench-site
version: "1.0"
extends: dl-training
overrides:
  SYSCTL-VM-SWAPPINESS: {severity: high, params: {value: 1}}
"""
"""A site ruleset as the README shows one: the shipped rules with one override (a file is
validated, the shipped ruleset is not)."""


def instructions(args: argparse.Namespace, exe: str) -> int:
    """``--instructions``: instruction counts (callgrind) and peak RSS of the scans users
    run, on this host: the figures of issue 20's live targets, stable on a busy machine."""
    tmp = Path(tempfile.mkdtemp(prefix="aiaudit-bench-instr-"))
    rows: dict[str, dict[str, float]] = {}
    try:
        small = make_host(tmp / "small", cpus=4, cstates=4, nvme=1, sysctl_files=3)
        site = tmp / "site.yaml"
        site.write_text(SITE_RULESET)
        state = tmp / "state.json"
        scan = [exe, "scan", "--user", "root", "--timeout", "3600", "--rule-timeout", "3600"]
        dl = [*scan, "--ruleset", "dl-training"]
        cases = {
            "python -c pass": [interpreter_of(exe), "-c", "pass"],
            "live json": [*dl, "--format", "json"],
            "live text": [*dl, "--format", "text"],
            "live json, one rule": [*dl, "--format", "json", "--only", "SYSCTL-VM-SWAPPINESS"],
            "live json, site ruleset": [*scan, "--ruleset", str(site), "--format", "json"],
            "live json, --state": [*dl, "--format", "json", "--state", str(state)],
            "small root json": [*dl, "--root", str(small), "--live", "--format", "json"],
            "prolog": [*scan, "--prolog", "--ruleset", "slurm-preflight", "--format", "json"],
        }
        if args.case:
            unknown = set(args.case) - set(cases)
            if unknown:
                raise SystemExit(f"bench: unknown --case {sorted(unknown)}: {sorted(cases)}")
            cases = {k: v for k, v in cases.items() if k in args.case}
        for name, argv in cases.items():
            measure(argv, 1, str(tmp))  # warm the page cache and .pyc files (and --state)
            rows[name] = {"minstr": callgrind(argv, str(tmp)) / 1e6,
                          "peak_rss_mb": measure(argv, 1, str(tmp))["peak_rss_mb"]}
            print(f"{name:<26} {rows[name]['minstr']:>9.1f} M instructions  "
                  f"peak {rows[name]['peak_rss_mb']:.1f} MB", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rss = max(r["peak_rss_mb"] for r in rows.values())
    print(f"\npeak_rss_mb (<= 40)        {rss:8.2f}  {'ok' if rss <= 40 else 'MISSED'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"instructions": rows, "aiaudit": exe},
                                              indent=2))
    return 0 if rss <= 40 or not args.check else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--scale", action="store_true",
                    help="all rules vs one rule on growing sysctl.d / sshd configurations")
    ap.add_argument("--case", action="append", default=[], metavar="NAME",
                    help="--instructions: measure only this case (repeatable), e.g. prolog")
    ap.add_argument("--instructions", action="store_true",
                    help="instruction counts (valgrind) and peak RSS of the live scans, the "
                         "site-ruleset and --state runs, a small root and the prolog")
    ap.add_argument("--callgrind", action="store_true",
                    help="--scale: compare instruction counts (valgrind), not wall time")
    ap.add_argument("--sizes", default="0,1,2",
                    help="--scale: which sizes (0: 20/10 files, 1: 200/100, 2: 2000/1000)")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    ap.add_argument("--aiaudit", default=None, help="aiaudit executable (default: venv's)")
    args = ap.parse_args()
    exe = args.aiaudit or shutil.which("aiaudit", path=str(Path(sys.executable).parent)) \
        or "aiaudit"
    if args.scale:
        return scale(args, exe)
    if args.instructions:
        return instructions(args, exe)
    python = interpreter_of(exe)
    editable = is_editable(python)
    tmp = Path(tempfile.mkdtemp(prefix="aiaudit-bench-"))
    try:
        small = make_host(tmp / "small", cpus=4, cstates=4, nvme=1, sysctl_files=3)
        large = make_host(tmp / "large", cpus=512, cstates=10, nvme=64, sysctl_files=200)
        scan = [exe, "scan", "--ruleset", "dl-training", "--user", "root"]
        cases = {
            "python -c pass": [python, "-c", "pass"],
            # not targets: where start-up goes (the imports any scan needs, then aiaudit's)
            "import deps": [python, "-c", IMPORT_DEPS],
            "import all": [python, "-c", IMPORT_ALL],
            "live json": [*scan, "--format", "json"],
            "live text": [*scan, "--format", "text"],
            "small json": [*scan, "--root", str(small), "--live", "--format", "json"],
            "small text": [*scan, "--root", str(small), "--live", "--format", "text"],
            "large json": [*scan, "--root", str(large), "--live", "--format", "json"],
            "large text": [*scan, "--root", str(large), "--live", "--format", "text"],
        }
        for argv in cases.values():  # warm the page cache and .pyc files
            measure(argv, 1, str(tmp))
        res = {name: measure(argv, args.runs, str(tmp)) for name, argv in cases.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = res["python -c pass"]["median_s"]
    print(f"aiaudit: {exe} (python {python}"
          + (", EDITABLE install: ratios differ from a real one" if editable else "") + ")")
    print(f"{'case':<16} {'median ms':>10} {'p90 ms':>8} {'x python':>9} {'peak MB':>8}")
    for name, r in res.items():
        print(f"{name:<16} {r['median_s'] * 1000:>10.1f} {r['p90_s'] * 1000:>8.1f} "
              f"{r['median_s'] / base:>9.2f} {r['peak_rss_mb']:>8.1f}")
    ratios = {
        "json_vs_python (<= 6)": max(res[f"{s} json"]["median_s"] for s in
                                     ("live", "small", "large")) / base,
        "text_vs_python (<= 10)": max(res[f"{s} text"]["median_s"] for s in
                                      ("live", "small", "large")) / base,
        "large_vs_small (<= 1.5)": res["large json"]["median_s"] / res["small json"]["median_s"],
        "peak_rss_mb (<= 40)": max(r["peak_rss_mb"] for n, r in res.items()
                                   if n != "python -c pass"),
    }
    limits = {"json_vs_python (<= 6)": 6, "text_vs_python (<= 10)": 10,
              "large_vs_small (<= 1.5)": 1.5, "peak_rss_mb (<= 40)": 40}
    print()
    ok = True
    for k, v in ratios.items():
        good = v <= limits[k]
        ok &= good
        print(f"{k:<26} {v:8.2f}  {'ok' if good else 'MISSED'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"cases": res, "ratios": ratios,
                                               "python": python, "editable": editable,
                                               "aiaudit": exe}, indent=2))
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
