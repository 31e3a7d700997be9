"""What the next boot sets for cpufreq: the governor, the energy performance preference
(EPP) and turbo/boost.

In order, later wins: the kernel default (``cpufreq.default_governor=`` on the command line
the bootloader will pass, else ``CONFIG_CPU_FREQ_DEFAULT_GOV_*`` in the kernel config;
intel_pstate and amd-pstate-epp in active mode start in ``powersave`` unless that default is
performance), ``cpupower.service`` with ``/etc/sysconfig/cpupower`` (RHEL
``CPUPOWER_START_OPTS``), ``/etc/default/cpupower`` or ``/etc/cpupower-service.conf`` (Arch),
other enabled services running ``cpupower frequency-set -g`` or ``echo X > .../
scaling_governor``, and tuned's ``[cpu]`` plugin (``governor=a|b``: the first one available)
when tuned is enabled.  EPP: units and tuned ``[cpu] energy_performance_preference``, else
forced to performance by the performance governor (intel_pstate.rst, amd-pstate.rst), else the
firmware's preference.  Boost: units writing ``intel_pstate/no_turbo`` or ``cpufreq/boost``,
tuned ``[cpu] no_turbo``; the kernel allows boost by default.

The boot configuration, its shell files and tuned are imported only when asked: a Slurm
prolog on a host without cpufreq (a VM) never needs them.
"""

from __future__ import annotations

import shlex
from typing import Any

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Evidence, Remediation, Result, Snippet, Status
from aiaudit.core.startup.records import record
from aiaudit.core.verdict import verdict
from aiaudit.linux import sysfs
from aiaudit.linux.cpu.cpufreq import ACTIVE_EPP_DRIVERS, CpufreqState
from aiaudit.linux.kernel.config import config_choice, kernel_config, kernel_config_missing
from aiaudit.linux.systemd.bootcmds import boot_commands, sysfs_writes

CPUPOWER_CONFIGS = ("/etc/sysconfig/cpupower", "/etc/default/cpupower",
                    "/etc/cpupower-service.conf")
GOVERNOR_FLAGS = ("-g", "--governor")
"""``cpupower frequency-set`` options that set the governor."""


@record
class BootSetting:
    """A value some boot mechanism sets, with where."""

    value: str
    source: str
    evidence: Evidence
    unit: str = ""
    """The unit whose start writes the value (``cpupower.service``, a service,
    ``tuned.service``); empty for the command line or the kernel default."""


BootChain = tuple[BootSetting | None, list[Evidence], bool]
"""(winning setting, evidence of every setting, set by configuration rather than a
default)."""


def default_governor(host: Host) -> BootSetting | None:
    """The kernel's default governor at boot (command line, then kernel config)."""
    # the boot configuration only where cpufreq is (not in most VMs)
    from aiaudit.linux.boot import cmdline as boot

    cfg = boot.load(host)
    if cfg.booted is not None:
        p = cfg.booted.get("cpufreq.default_governor")
        if p is not None and p.value:
            return BootSetting(p.value, f"cpufreq.default_governor on "
                               f"{cfg.booted.where('cpufreq.default_governor')}",
                               cfg.booted.evidence("cpufreq.default_governor"))
    c = config_choice(host, "CPU_FREQ_DEFAULT_GOV")
    if c is None:
        return None
    return BootSetting(c.value, f"kernel default ({c.path.lstrip('/')}:{c.line})",
                       Evidence.file(c.path, c.line, c.text))


def cpupower_opts_governor(opts: str) -> str | None:
    """The governor of ``CPUPOWER_START_OPTS="frequency-set -g performance"``."""
    try:
        words = shlex.split(opts)
    except ValueError:
        words = opts.split()
    if "frequency-set" not in words:
        return None
    return next(iter(_flag_values(words, GOVERNOR_FLAGS)), None)


def _flag_values(words: tuple[str, ...] | list[str], flags: tuple[str, ...]) -> list[str]:
    """The values given to any of ``flags`` in ``words`` (``-g X``, ``--governor=X``), in
    order."""
    out = []
    for i, w in enumerate(words):
        if w in flags and i + 1 < len(words):
            out.append(words[i + 1])
        elif any(w.startswith(f + "=") for f in flags if f.startswith("--")):
            out.append(w.split("=", 1)[1])
    return out


def cpupower_service(host: Host, key: str) -> list[BootSetting]:
    """What ``cpupower.service`` (when enabled) sets for ``key`` (``governor``)."""
    from aiaudit.linux.rootkind import units_run
    from aiaudit.linux.systemd import units as systemd

    out: list[BootSetting] = []
    if not units_run(host) or not systemd.is_enabled(host, "cpupower.service").enabled:
        return out
    for path in CPUPOWER_CONFIGS:
        try:
            text = host.try_read_text(path)
        except HostError:
            continue
        if text is None:
            continue
        from aiaudit.linux.boot import loaders as bc  # see default_governor

        assigns, _, _ = bc.parse_shell_assignments(text)
        for a in assigns:
            val = None
            if a.name == "CPUPOWER_START_OPTS" and key == "governor":
                val = cpupower_opts_governor(a.value)
            elif a.name.lower() == key and a.value:
                val = a.value
            if val:
                out.append(BootSetting(val, f"cpupower.service ({path.lstrip('/')}:{a.line})",
                                       Evidence.file(path, a.line, a.raw.strip()),
                                       "cpupower.service"))
    return out


def unit_settings(host: Host, sysfs_name: str, cpupower_flag: tuple[str, ...] = ()
                  ) -> list[BootSetting]:
    """Enabled services (other than cpupower.service) that write ``sysfs_name`` or run
    ``cpupower frequency-set <flag> VALUE``."""
    out: list[BootSetting] = []
    for value, _path, c in sysfs_writes(host, sysfs_name):
        out.append(BootSetting(value, f"{c.unit} ({c.file.lstrip('/')}:{c.line})",
                               Evidence.file(c.file, c.line, c.text), c.unit))
    if not cpupower_flag:
        return out
    cmds, _ = boot_commands(host)
    for c in cmds:
        if c.unit == "cpupower.service" or not c.argv or \
                not c.argv[0].endswith("cpupower") or "frequency-set" not in c.argv:
            continue
        out += [BootSetting(val, f"{c.unit} ({c.file.lstrip('/')}:{c.line})",
                            Evidence.file(c.file, c.line, c.text), c.unit)
                for val in _flag_values(c.argv, cpupower_flag) if val]
    return out


def tuned_setting(host: Host, key: str) -> BootSetting | None:
    """tuned ``[cpu] key`` of the active profile (when tuned is enabled); of ``a|b``, the
    first."""
    from aiaudit.linux.rootkind import units_run
    from aiaudit.linux.tuned import profiles as tuned  # see default_governor

    if not units_run(host):  # tuned.service is a unit: nothing starts it
        return None
    st = tuned.load(host)
    o = st.get("cpu", key)
    if o is None:
        return None
    return BootSetting(o.value.split("|")[0].strip(),
                       f"{st.describe()} [cpu] {key} ({o.file.lstrip('/')}:{o.line})",
                       Evidence.file(o.file, o.line, f"{key}={o.value}"), "tuned.service")


def apply_boot(win: BootSetting, what: str, now: str) -> Remediation:
    """The fix for drift (the boot setting ``win`` is right, the running CPUs are not):
    restart the unit that sets it at boot, else run ``now`` (which writes ``win.value``,
    as the command line or kernel default does at boot); nothing to persist."""
    if win.unit:
        cmd = f"systemctl restart {win.unit}"
        return Remediation(f"Apply the configured {what} {win.value}: `{cmd}` sets it as "
                           "at boot; the boot configuration is already right.",
                           (Snippet.command(cmd, f"{win.unit} sets the {what} as at boot"),))
    return Remediation(f"Apply the configured {what} {win.value} now ({win.source}, already "
                       "right, sets it at every boot).",
                       (Snippet.command(now, "apply the boot value now"),))


def boot_chain(default: BootSetting | None, *sources: list[BootSetting]) -> BootChain:
    """Apply ``sources`` in order over ``default``: the last setting wins."""
    win = default
    ev: list[Evidence] = [default.evidence] if default else []
    explicit = False
    for group in sources:
        for s in group:
            win, explicit = s, True
            ev.append(s.evidence)
    return win, ev, explicit


def boot_governor(host: Host) -> BootChain:
    """The governor at the next boot."""
    tg = tuned_setting(host, "governor")
    return boot_chain(default_governor(host), cpupower_service(host, "governor"),
                      unit_settings(host, "scaling_governor", GOVERNOR_FLAGS),
                      [tg] if tg else [])


def active_mode_default(win: BootSetting | None, explicit: bool,
                        state: CpufreqState | None) -> BootSetting | None:
    """intel_pstate and amd-pstate-epp in active mode start in powersave unless the kernel
    default is performance: the boot governor when only a default decides and every live
    policy has such a driver."""
    if win is None or explicit or state is None or win.value == "performance" or \
            not all(p.driver in ACTIVE_EPP_DRIVERS for p in state.policies):
        return win
    return BootSetting("powersave", f"{state.drivers} active mode default ({win.source} "
                       "is not performance)", win.evidence)


def cmdline_unknown(host: Host) -> str:
    """Why the next boot's kernel command line cannot be known from this root (a
    stateless image without ``--kernel-cmdline``), or ``""``: where a default decides
    (the command line may set ``cpufreq.default_governor=``), the rule cannot decide."""
    from aiaudit.linux.boot import cmdline as boot  # see default_governor

    cfg = boot.load(host)
    return cfg.unknown if cfg.booted is None else ""


def kernel_default_unknown(host: Host) -> str:
    """Why :func:`default_governor` found no kernel default (display form)."""
    kc = kernel_config(host)
    if kc is None:
        return f"kernel default unknown: {kernel_config_missing(host)}"
    return (f"kernel default unknown: {kc[0].lstrip('/')} has no "
            "CONFIG_CPU_FREQ_DEFAULT_GOV_*=y")


def governor_searched(host: Host) -> str:
    """What :func:`boot_governor` looked for, in its order and display form, for the
    ``default`` evidence when nothing sets the governor: the command line the bootloader
    will pass, cpupower.service's configuration, enabled units, tuned."""
    from aiaudit.linux.boot import cmdline as boot
    from aiaudit.linux.systemd import units as systemd
    from aiaudit.linux.tuned import profiles as tuned  # see default_governor

    cfg = boot.load(host)
    cmdline = (f"no cpufreq.default_governor= on {cfg.booted.where()}" if cfg.booted else
               f"no cpufreq.default_governor= ({boot.not_found()})")
    cpupower = systemd.is_enabled(host, "cpupower.service")
    cpw = (f"no governor in {' or '.join(p.lstrip('/') for p in CPUPOWER_CONFIGS)} "
           "(cpupower.service)" if cpupower.enabled else "cpupower.service not enabled")
    return "scaling governor at boot: " + "; ".join((
        cmdline, cpw, "no enabled unit writing scaling_governor or running cpupower "
        "frequency-set -g", tuned.load(host).lacks("cpu", "governor")))


def governor_unknown(host: Host) -> Evidence:
    """The ``default`` evidence when nothing sets the governor and no kernel default is
    known: what was looked for, and why the default is unknown."""
    return Evidence.default(governor_searched(host), kernel_default_unknown(host))


def governor_conflicts(host: Host, allowed: list[str]) -> list[str]:
    """Boot settings of the governor outside ``allowed`` that a fix's own unit cannot
    override (tuned applies its profile after boot) or should not fight: what a person
    has to change."""
    from aiaudit.linux.tuned import profiles as tuned  # see default_governor

    out = []
    tg = tuned_setting(host, "governor")
    if tg is not None and tg.value not in allowed:
        out.append(f"{tuned.load(host).describe()} sets [cpu] governor={tg.value} after "
                   "boot: change it")
    for other in [*cpupower_service(host, "governor"),
                  *unit_settings(host, "scaling_governor", GOVERNOR_FLAGS)]:
        if other.value not in allowed:
            out.append(f"{other.source} sets {other.value}: change it")
    return out


EPP = "energy_performance_preference"


def boot_epp(host: Host) -> BootChain:
    """The energy performance preference at the next boot: units and tuned, else forced
    by a performance boot governor, else the driver's (firmware's) default, with a
    ``default`` evidence naming what was looked for."""
    units = unit_settings(host, EPP)
    t = tuned_setting(host, EPP)
    win, ev, explicit = boot_chain(None, units, [t] if t else [])
    if win is not None:
        return win, ev, explicit
    gwin, gev, _ = boot_governor(host)
    if gwin is not None and gwin.value == "performance":
        # the unit that sets the governor forces the preference when it runs
        return BootSetting("performance", f"forced by the performance governor "
                           f"({gwin.source}) with intel_pstate/amd-pstate-epp",
                           gwin.evidence, gwin.unit), gev, True
    from aiaudit.linux.tuned import profiles as tuned  # see default_governor

    gov = (f"the boot governor is {gwin.value} ({gwin.source}), not performance"
           if gwin is not None else "the boot governor is unknown")
    default = ("driver default (the firmware's HWP/CPPC preference): unknown offline"
               if not host.live else "driver default (the firmware's HWP/CPPC preference)")
    return None, [Evidence.default(
        f"energy performance preference at boot: no enabled unit writing {EPP}; "
        + tuned.load(host).lacks("cpu", EPP) + "; " + gov, default), *gev], False


def boost_disabled_at_boot(host: Host) -> list[BootSetting]:
    """Boot settings that disable turbo/boost: units writing ``intel_pstate/no_turbo=1``
    or ``cpufreq/boost=0``, tuned ``[cpu] no_turbo`` true."""
    off = [s for s in unit_settings(host, "intel_pstate/no_turbo") if s.value == "1"]
    off += [s for s in unit_settings(host, "cpufreq/boost") if s.value == "0"]
    t = tuned_setting(host, "no_turbo")
    if t is not None and t.value.lower() in ("1", "true", "yes"):
        off.append(t)
    return off


def boost_at_boot(off: list[BootSetting]) -> BootSetting:
    """Turbo/boost at the next boot: disabled by the last of ``off``, else the kernel's
    default (allowed)."""
    if off:
        return BootSetting("disabled", off[-1].source, off[-1].evidence)
    return BootSetting("enabled", "kernel default: boost allowed",
                       Evidence.default("turbo/boost at boot", "enabled"))


SUBJECT = "cpufreq"


@record
class FreqVerdict:
    """The decision for one cpufreq rule."""

    status: Status
    aspect: Aspect
    message: str
    expected: str
    actual: str | None
    data: dict[str, Any]

    def result(self, evidence: list[Evidence], remediation: Remediation | None) -> Result:
        """The rule's result; ``remediation`` is kept only for a failure."""
        return Result(self.status, SUBJECT, self.message, expected=self.expected,
                      actual=self.actual, aspect=self.aspect, evidence=tuple(evidence),
                      remediation=remediation if self.status is Status.FAIL else None,
                      data=self.data)


def judge(*, live: bool, persist: bool, what: str, want: str, state: CpufreqState | None,
          bad: dict[str, list[int]] | None, runtime_txt: str, win: BootSetting | None,
          explicit: bool, boot_ok: bool | None) -> FreqVerdict:
    """Decide from the live policies (``bad``: wrong value -> CPUs, ``None`` offline) and the
    winning boot setting ``win`` (``boot_ok`` its judgement; ``explicit``: configuration,
    not a default, sets it).  Without ``persist`` a right live state is enough."""
    rt_ok = None if bad is None else not bad
    if live and not persist and rt_ok:
        boot_ok = True
    boot_txt = f"{win.value} ({win.source})" if win else "not set (kernel default unknown)"
    status, aspect, msg = verdict(live, rt_ok, boot_ok, boot_set=explicit, what=what,
                                  runtime_txt=runtime_txt, boot_txt=boot_txt, want=want)
    data: dict[str, Any] = {"boot": win.value if win else None}
    if state is not None:
        data["drivers"] = state.drivers
        if bad:
            data["offending_cpus"] = sysfs.format_cpulist(c for v in bad.values() for c in v)
    actual = runtime_txt if live else (win.value if win else None)
    return FreqVerdict(status, aspect, msg, want, actual, data)
