"""What decides a sysctl at boot besides the sysctl.d files: which program applies them,
programs that write sysctls after it (ufw), and kernel defaults that depend on how the
kernel was built.

* **Applier** (SEMANTICS §8): systemd-sysctl where systemd is the init system; on a root
  without systemd (sysvinit, containers, minimal images) procps' init script runs
  ``sysctl --system``, so the procps order decides (``/etc/sysctl.conf`` read last).
* **ufw** (0.36, ``/lib/ufw/ufw-init-functions`` ``ufw_start``): with ``ENABLED=yes`` (or
  ``YES``) in ``/etc/ufw/ufw.conf`` and ufw started at boot, ufw-init runs
  ``sysctl -e -q -p $IPT_SYSCTL`` (``/etc/default/ufw``, ``/etc/ufw/sysctl.conf`` as
  shipped) when that file is not empty: after systemd-sysctl, before tuned.
* **Kernel defaults from the build config**: the running kernel's ``/proc/config.gz``
  live (else its ``/boot/config-<release>``); offline ``/boot/config-<release>`` of the
  kernel the bootloader will start (BLS ``version``, grub.cfg's ``vmlinuz-<release>``),
  else the newest one.
  ``kernel.numa_balancing`` (``kernel/sched/core.c`` ``check_numabalancing_enable``): the
  ``numa_balancing=enable|disable`` kernel parameter decides; else 1 only with
  ``CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y`` on a machine with more than one online NUMA
  node, 0 otherwise.  ``kernel.dmesg_restrict``: ``CONFIG_SECURITY_DMESG_RESTRICT``.
  ``kernel.unprivileged_bpf_disabled``: 2 with ``CONFIG_BPF_UNPRIV_DEFAULT_OFF=y``, else 0.
* **Kernel defaults from a distribution's patch** (``fs.protected_symlinks``,
  ``fs.protected_hardlinks``: 1 on Debian's kernels): :mod:`aiaudit.linux.sysctl.patched`.
"""

from __future__ import annotations

import re

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record
from aiaudit.linux.boot import cmdline as boot
from aiaudit.linux.kernel.config import lines_with
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.systemd import units as systemd

SYSTEMD_BINARIES = ("/usr/lib/systemd/systemd", "/lib/systemd/systemd")
PROCPS_INIT = "/etc/init.d/procps"
UFW_CONF = "/etc/ufw/ufw.conf"
UFW_DEFAULT = "/etc/default/ufw"


@record
class Applier:
    """The program that writes the sysctl.d files at boot."""

    name: str
    """``systemd-sysctl`` or ``procps``."""
    reason: str
    """Why (``/sbin/init is systemd``, ``no systemd on this root; ...``)."""


def applier(host: Host) -> Applier:
    """Which program applies sysctl files when the scanned root boots (memoized): decided
    from the root's ``/sbin/init`` (a live PID 1 that is not systemd, a container's, says
    nothing about the next boot)."""
    return host.memo(("sysctl-applier",), lambda: _applier(host))


def _applier(host: Host) -> Applier:
    try:
        init = host.resolve("/sbin/init")
    except HostError:
        init = None
    if init is not None:
        if init.rsplit("/", 1)[-1] == "systemd":
            return Applier("systemd-sysctl", f"/sbin/init is {init}")
        return Applier("procps", f"/sbin/init is {init}, not systemd: procps' init script "
                       "(`sysctl --system`) applies the sysctl files")
    if any(host.is_file(p) for p in SYSTEMD_BINARIES):
        return Applier("systemd-sysctl", "systemd is installed (no /sbin/init)")
    script = "" if host.is_file(PROCPS_INIT) else f" (no {PROCPS_INIT}: assumed to be run " \
        "by the image's entry point)"
    return Applier("procps", "no systemd on this root: `sysctl --system` semantics" + script)


# ------------------------------------------------------------------ ufw
@record
class UfwSysctl:
    """The sysctl file an enabled ufw applies at start."""

    path: str
    entries: tuple[sp.Entry, ...]
    reason: str
    problems: tuple[str, ...] = ()


def _shell_value(text: str, name: str) -> tuple[str, int] | None:
    out = None
    for n, raw in enumerate(text.splitlines(), 1):
        m = re.match(rf"\s*{name}=(.*)$", raw)
        if m:
            out = (m.group(1).strip().strip("\"'"), n)
    return out


def ufw_sysctl(host: Host, init: Applier) -> UfwSysctl | None:
    """The file ufw-init re-applies after the boot applier, or ``None`` when ufw does not
    start at boot or applies nothing (memoized)."""
    return host.memo(("ufw-sysctl", init.name), lambda: _ufw_sysctl(host, init))


def _ufw_sysctl(host: Host, init: Applier) -> UfwSysctl | None:
    try:
        conf = host.try_read_text(UFW_CONF)
    except HostError:
        return None
    if conf is None:
        return None
    enabled = _shell_value(conf, "ENABLED")
    if enabled is None or enabled[0] not in ("yes", "YES"):
        return None
    if init.name == "systemd-sysctl":
        en = systemd.is_enabled(host, "ufw.service")
        if not en.enabled:
            return None
        why = f"ufw is enabled ({UFW_CONF}:{enabled[1]} ENABLED={enabled[0]}, {en.reason})"
    else:
        links = [f"/etc/{d}/{n}" for d in ("rcS.d", "rc2.d") for n in host.listdir(f"/etc/{d}")
                 if n.startswith("S") and n[3:] == "ufw"]
        if not links:
            return None
        why = f"ufw is enabled ({UFW_CONF}:{enabled[1]} ENABLED={enabled[0]}, {links[0]})"
    try:
        dflt = host.try_read_text(UFW_DEFAULT) or ""
    except HostError as exc:
        return UfwSysctl("", (), why, (str(exc),))
    setting = _shell_value(dflt, "IPT_SYSCTL")
    if setting is None or not setting[0].startswith("/"):
        return None
    path = setting[0]
    try:
        text = host.try_read_text(path)
    except HostError as exc:
        return UfwSysctl(path, (), why, (str(exc),))
    if not text:  # ufw-init: [ -s "$IPT_SYSCTL" ]
        return None
    try:
        entries = sp.parse_procps(text, path)
    except ParseError as exc:
        return UfwSysctl(path, (), why, (str(exc),))
    return UfwSysctl(path, tuple(entries), why)


def ufw_decide(host: Host, init: Applier, key: str) -> tuple[sp.Decision, UfwSysctl] | None:
    """The value ufw-init's ``sysctl -p`` writes to ``key`` (slash form), or ``None``."""
    u = ufw_sysctl(host, init)
    if u is None or not u.entries:
        return None
    dec = sp.procps_decide(u.entries, key)
    return (dec, u) if dec.entry is not None else None


# ------------------------------------------------------------------ kernel defaults
@record
class KernelDefault:
    """A kernel default derived from the kernel's build configuration or a distribution's
    kernel patch (:mod:`aiaudit.linux.sysctl.patched`)."""

    value: str | None
    """The value; ``None`` when the kernel that boots leaves it unknown (a key some
    distribution patches, on a kernel whose builder is not known)."""
    text: str
    """``0 (CONFIG_NUMA_BALANCING_DEFAULT_ENABLED is not set, proc/config.gz:214)``."""
    evidence: tuple[Evidence, ...]
    candidates: tuple[str, ...] = ()
    """With ``value`` unknown, every value it can have (``kernel.pid_max`` offline: one per
    CPU count): a rule that holds, or fails, for all of them is decided all the same."""


def _config_option(text: str, name: str) -> tuple[str | None, int | None]:
    """(value, line) of ``CONFIG_<name>`` (``None`` value: not set)."""
    want = f"CONFIG_{name}="
    unset = f"# CONFIG_{name} is not set"
    for n, line in lines_with(text, f"CONFIG_{name}"):
        if line.startswith(want):
            return line[len(want):].strip('"'), n
        if line == unset:
            return None, n
    return None, None


def _online_nodes(host: Host) -> int | None:
    return _cpulist_count(host, "/sys/devices/system/node/online")


def _cpulist_count(host: Host, path: str) -> int | None:
    """How many ids a live ``0-3,8`` list names (``None`` offline or unreadable)."""
    if not host.live:
        return None
    try:
        text = host.read_text(path).strip()
    except HostError:
        return None
    count = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        count += int(hi or lo) - int(lo) + 1
    return count


_IMAGE = lazy_pattern(r"^\s*(?:linux|linuxefi|linux16)\s+\S*vmlinu[xz]-(\S+)")


def boot_kernel_release(host: Host) -> str | None:
    """The release of the kernel the bootloader will start (offline): the ``version`` of
    the default BLS entry, or the ``vmlinuz-<release>`` of grub.cfg's first ``linux``
    line; ``None`` when neither names one."""
    from aiaudit.linux.boot import loaders as bc

    try:
        booted = boot.load(host).booted
        if booted is None or booted.kind not in ("bls", "grub.cfg"):
            return None
        text = host.read_text(booted.path)
    except (HostError, ParseError):
        return None
    if booted.kind == "bls":
        try:
            return bc.parse_bls(text).version
        except ParseError:
            return None
    lines = text.splitlines()
    m = _IMAGE().match(lines[booted.line - 1]) if booted.line and booted.line <= len(lines) \
        else None
    return m.group(1) if m else None


def boot_kernel_config(host: Host) -> tuple[str, str] | None:
    """(path, text) of ``/boot/config-<release>`` for the kernel that will boot, else the
    newest one (:func:`aiaudit.tuning.kernel_config`)."""
    from aiaudit.linux.kernel.config import kernel_config

    rel = boot_kernel_release(host)
    if rel and "/" not in rel:
        path = f"/boot/config-{rel}"
        try:
            return path, host.read_text(path)
        except HostError:
            pass
    return kernel_config(host)


DERIVED_DEFAULTS = ("kernel/numa_balancing", "kernel/dmesg_restrict",
                    "kernel/unprivileged_bpf_disabled", "kernel/pid_max")
"""The keys whose kernel default :func:`kernel_default` derives from the build config
(slash form); those of :data:`aiaudit.linux.sysctl.patched.PATCHED` come from the kernel's
builder instead."""


def kernel_default(host: Host, key: str) -> KernelDefault | None:
    """The value ``key`` (slash form) has at boot when no file sets it, as the kernel's
    build configuration decides (a value of ``None``: it depends on what the root cannot
    say, the CPU count offline); ``None`` when this module does not know the key or the
    configuration is not available.  Defaults a distribution patches:
    :func:`aiaudit.linux.sysctl.patched.patched_default`."""
    if key not in DERIVED_DEFAULTS:
        return None
    from aiaudit.linux.kernel.config import kernel_config

    if key == "kernel/pid_max":
        return _pid_max_default(host)
    if key == "kernel/numa_balancing":
        by_param = _numa_balancing_param(host)
        if by_param is not None:
            return by_param
    kc = boot_kernel_config(host) if not host.live else kernel_config(host)
    if kc is None:
        return None
    path, text = kc
    if key == "kernel/dmesg_restrict":
        return _dmesg_restrict_default(path, text)
    if key == "kernel/unprivileged_bpf_disabled":
        return _bpf_default(path, text)
    return _numa_balancing_default(host, path, text)


def _numa_balancing_param(host: Host) -> KernelDefault | None:
    """``numa_balancing=enable|disable`` on the kernel command line that boots, which
    decides before the build configuration (``check_numabalancing_enable``)."""
    try:
        cmd = boot.load(host).booted
    except (HostError, ParseError):
        return None
    if cmd is None:
        return None
    param = cmd.get("numa_balancing")
    if param is None or param.value not in ("enable", "disable"):
        return None
    value = "1" if param.value == "enable" else "0"
    return KernelDefault(value, f"{value} ({param} on {cmd.where()})",
                         (cmd.evidence("numa_balancing"),))


def _dmesg_restrict_default(path: str, text: str) -> KernelDefault:
    """``kernel.dmesg_restrict`` at boot: ``CONFIG_SECURITY_DMESG_RESTRICT``."""
    val, line = _config_option(text, "SECURITY_DMESG_RESTRICT")
    value = "1" if val == "y" else "0"
    state = "=y" if val == "y" else " is not set"
    return KernelDefault(value, f"kernel default {value}: CONFIG_SECURITY_DMESG_RESTRICT"
                         f"{state} ({path.lstrip('/')}{f':{line}' if line else ''})",
                         (Evidence.file(path, line, f"CONFIG_SECURITY_DMESG_RESTRICT{state}"),))


PID_MAX_DEFAULT, PIDS_PER_CPU, PID_MAX_LIMIT = 32768, 1024, 4 * 1024 * 1024
MAX_ASSUMED_CPUS = 4095
"""Offline, the machine is assumed to have fewer than 4096 possible CPUs."""


def _pid_max_default(host: Host) -> KernelDefault:
    """``kernel.pid_max`` at boot (``kernel/pid.c pid_idr_init``, 64-bit): 1024 per
    possible CPU, at least 32768 and at most 4194304.  Known live (the possible CPUs);
    offline the machine's CPU count is not in the root: unknown."""
    path = "/sys/devices/system/cpu/possible"
    cpus = _cpulist_count(host, path)
    if cpus is None:
        # one value per CPU count below 4096 (a machine with more is not assumed: it would
        # reach the limit itself)
        values = tuple(sorted({min(PID_MAX_LIMIT, max(PID_MAX_DEFAULT, PIDS_PER_CPU * n))
                               for n in range(1, MAX_ASSUMED_CPUS + 1)}))
        return KernelDefault(None, "kernel default 1024 per possible CPU, at least "
                             f"{PID_MAX_DEFAULT} (kernel/pid.c): {values[0]} to {values[-1]} "
                             f"on a machine with up to {MAX_ASSUMED_CPUS} possible CPUs (the "
                             "CPU count is not known offline)", (), tuple(map(str, values)))
    value = min(PID_MAX_LIMIT, max(PID_MAX_DEFAULT, PIDS_PER_CPU * cpus))
    return KernelDefault(str(value), f"kernel default {value}: 1024 per possible CPU "
                         f"({cpus} in {path.lstrip('/')}), at least {PID_MAX_DEFAULT}, at most "
                         f"{PID_MAX_LIMIT}", (Evidence.runtime(path),))


def _bpf_default(path: str, text: str) -> KernelDefault:
    """``kernel.unprivileged_bpf_disabled`` at boot (``kernel/bpf/syscall.c``, 5.13+): 2
    with ``CONFIG_BPF_UNPRIV_DEFAULT_OFF=y``, else 0 (earlier kernels have no such option
    and start at 0)."""
    val, line = _config_option(text, "BPF_UNPRIV_DEFAULT_OFF")
    value = "2" if val == "y" else "0"
    state = "=y" if val == "y" else " is not set"
    return KernelDefault(value, f"kernel default {value}: CONFIG_BPF_UNPRIV_DEFAULT_OFF"
                         f"{state} ({path.lstrip('/')}{f':{line}' if line else ''})",
                         (Evidence.file(path, line, f"CONFIG_BPF_UNPRIV_DEFAULT_OFF{state}"),))


def _numa_balancing_default(host: Host, path: str, text: str) -> KernelDefault:
    """``kernel.numa_balancing`` at boot without a command-line parameter: 1 only with
    ``CONFIG_NUMA_BALANCING_DEFAULT_ENABLED=y`` on more than one online NUMA node."""
    val, line = _config_option(text, "NUMA_BALANCING_DEFAULT_ENABLED")
    where = f"{path.lstrip('/')}{f':{line}' if line else ''}"
    ev = Evidence.file(path, line, "CONFIG_NUMA_BALANCING_DEFAULT_ENABLED" +
                       ("=y" if val == "y" else " is not set"))
    if val != "y":
        return KernelDefault("0", f"kernel default 0: CONFIG_NUMA_BALANCING_DEFAULT_ENABLED "
                             f"is not set ({where})", (ev,))
    nodes = _online_nodes(host)
    if nodes is not None and nodes <= 1:
        return KernelDefault("0", f"kernel default 0: CONFIG_NUMA_BALANCING_DEFAULT_ENABLED"
                             f"=y ({where}) but only {nodes} NUMA node is online",
                             (ev, Evidence.runtime("/sys/devices/system/node/online")))
    more = "" if nodes is not None else " on a machine with more than one NUMA node"
    return KernelDefault("1", f"kernel default 1{more}: CONFIG_NUMA_BALANCING_DEFAULT_ENABLED"
                         f"=y ({where})", (ev,))
