"""Builders of /sys and /proc trees (as ``make_root`` file dicts) for the tuning checks."""

from __future__ import annotations

from typing import Any, Callable

CPU = "/sys/devices/system/cpu"


def cpufreq(n: int, driver: str, gov: Callable[[int], str],
            epp: Callable[[int], str] | None = None) -> dict[str, str]:
    """``n`` CPUs, one policy each."""
    files = {f"{CPU}/online": f"0-{n - 1}\n"}
    for c in range(n):
        d = f"{CPU}/cpufreq/policy{c}"
        files[f"{d}/affected_cpus"] = f"{c}\n"
        files[f"{d}/scaling_driver"] = driver + "\n"
        files[f"{d}/scaling_governor"] = gov(c) + "\n"
        if epp:
            files[f"{d}/energy_performance_preference"] = epp(c) + "\n"
    return files


def intel(make_root: Callable[..., Any], gov: Callable[[int], str],
          epp: Callable[[int], str] | None = None, extra: dict[str, str] | None = None,
          links: dict[str, str] | None = None) -> Any:
    """A live root with 128 intel_pstate CPUs in active mode, turbo allowed."""
    files = cpufreq(128, "intel_pstate", gov, epp)
    files[f"{CPU}/intel_pstate/status"] = "active\n"
    files[f"{CPU}/intel_pstate/no_turbo"] = "0\n"
    files["/proc/cmdline"] = "ro quiet\n"
    files.update(extra or {})
    return make_root(files, links or {})


def cpuidle(n: int, states: list[tuple[str, int]], disabled: Callable[[int, str], bool]
            = lambda c, s: False, driver: str = "intel_idle",
            qos: Callable[[int], str] = lambda c: "0") -> dict[str, str]:
    """``n`` CPUs with the same idle ``states`` (name, latency)."""
    files = {f"{CPU}/online": f"0-{n - 1}\n", f"{CPU}/cpuidle/current_driver": driver + "\n"}
    for c in range(n):
        files[f"{CPU}/cpu{c}/power/pm_qos_resume_latency_us"] = qos(c) + "\n"
        for k, (name, lat) in enumerate(states):
            d = f"{CPU}/cpu{c}/cpuidle/state{k}"
            files[f"{d}/name"] = name + "\n"
            files[f"{d}/latency"] = f"{lat}\n"
            files[f"{d}/disable"] = f"{int(disabled(c, name))}\n"
    return files


def disk(name: str, sched: str, rot: str = "0", ra: str = "128", queues: int = 4,
         hidden: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(files, links) for one disk under /sys/devices/virtual/test."""
    base = f"/sys/devices/virtual/test/{name}"
    files = {f"{base}/queue/scheduler": sched + "\n", f"{base}/queue/rotational": rot + "\n",
             f"{base}/queue/read_ahead_kb": ra + "\n"}
    for q in range(queues):
        files[f"{base}/mq/{q}/nr_tags"] = "1023\n"
    if hidden is not None:
        files[f"{base}/hidden"] = hidden + "\n"
    return files, {f"/sys/block/{name}": f"../devices/virtual/test/{name}"}


def disks_root(make_root: Callable[..., Any],
               *disks: tuple[dict[str, str], dict[str, str]],
               files: dict[str, str] | None = None, links: dict[str, str] | None = None
               ) -> Any:
    """A live root with the :func:`disk` trees of ``disks`` and ``/proc/cmdline``."""
    f: dict[str, str] = dict(files or {})
    lk: dict[str, str] = dict(links or {})
    for df, dl in disks:
        f.update(df)
        lk.update(dl)
    f["/proc/cmdline"] = "ro\n"
    return make_root(f, lk)


def by_subject(results: list[Any]) -> dict[str, Any]:
    """Results by subject."""
    return {r.subject: r for r in results}


GRUB_CFG = ("menuentry 'Debian GNU/Linux' {\n"
            "\tlinux\t/boot/vmlinuz-6.1.0 root=UUID=1 ro %s\n}\n")
TUNED_ENABLED = {"/usr/lib/systemd/system/tuned.service":
                 "[Service]\nExecStart=/usr/sbin/tuned\n[Install]\nWantedBy=multi-user.target\n"}
TUNED_LINK = {"/etc/systemd/system/multi-user.target.wants/tuned.service":
              "/usr/lib/systemd/system/tuned.service"}
