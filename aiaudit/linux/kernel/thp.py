"""Transparent hugepages at the next boot: ``enabled`` and ``defrag``.

Documentation/admin-guide/mm/transhuge.rst; in order, later wins: the kernel default
(``CONFIG_TRANSPARENT_HUGEPAGE_{ALWAYS,MADVISE,NEVER}`` in the kernel config for
``enabled``; ``madvise`` for ``defrag`` since 4.6, mm/huge_memory.c), then
``transparent_hugepage=`` on the command line the bootloader will pass (``enabled`` only),
enabled services writing the sysfs file, tuned ``[vm] transparent_hugepages`` /
``transparent_hugepage.defrag`` (tuned/plugins/plugin_vm.py), which tuned applies after boot.

The boot configuration and tuned are imported when a THP value is asked for, not with this
module.
"""

from __future__ import annotations

from dataclasses import field

from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.kernel.config import config_choice, kernel_config, kernel_config_missing
from aiaudit.linux.systemd.bootcmds import sysfs_writes

THP = "/sys/kernel/mm/transparent_hugepage"
FIX_UNIT = "/etc/systemd/system/aiaudit-thp-defrag.service"
"""The oneshot unit a ``defrag`` fix installs (its own write is not a competing one)."""
CHOICES = ("always", "madvise", "never")
"""The ``CONFIG_TRANSPARENT_HUGEPAGE_*`` choice (the default of ``enabled``)."""


@record(frozen=False)
class ThpBoot:
    """What the next boot sets for ``transparent_hugepage/<setting>``."""

    value: str | None
    """``None``: nothing sets it and the kernel default is unknown."""
    source: str
    explicit: bool = False
    """Configuration, not a default, sets it."""
    evidence: list[Evidence] = field(default_factory=list)
    competing: list[str] = field(default_factory=list)
    """Settings outside the allowed values that a person must change (a unit, tuned)."""
    unit: str = ""
    """The unit whose start writes :attr:`value` (a service, ``tuned.service``); empty when
    the command line or the kernel default decides."""


def _enabled_default(host: Host, what: str) -> tuple[ThpBoot, Evidence | None]:
    """The kernel config's default of ``enabled``, then the command line; when neither
    says, also a ``default`` evidence naming what was looked for (for when nothing else
    sets it either)."""
    from aiaudit.linux.boot import cmdline as boot

    b = ThpBoot(None, "kernel default unknown: no /boot/config-*")
    kc = config_choice(host, "TRANSPARENT_HUGEPAGE", CHOICES)
    if kc is not None:
        b.value, b.source = kc.value, f"kernel default ({kc.path.lstrip('/')}:{kc.line})"
        b.evidence.append(Evidence.file(kc.path, kc.line))
    cfg = boot.load(host)
    bp = cfg.booted.get("transparent_hugepage") if cfg.booted is not None else None
    if cfg.booted is not None and bp is not None and bp.value:
        b.value, b.explicit = bp.value, True
        b.source = f"{bp} on {cfg.booted.where('transparent_hugepage')}"
        b.evidence.append(cfg.booted.evidence("transparent_hugepage"))
    if b.value is not None:
        return b, None
    from aiaudit.linux.tuned import profiles as tuned

    kconf = kernel_config(host)
    missing = kernel_config_missing(host)
    if kconf is not None:  # a config without the choice (not "no config")
        missing = (f"{kconf[0].lstrip('/')} has no "
                   "CONFIG_TRANSPARENT_HUGEPAGE_{ALWAYS,MADVISE,NEVER}=y")
        b.source = f"kernel default unknown: {missing}"
    cmdline = (f"no transparent_hugepage= on {cfg.booted.where()}" if cfg.booted
               else boot.not_found())
    return b, Evidence.default(
        f"{what} at boot: {cmdline}; no enabled unit writing {what}; "
        + tuned.load(host).lacks("vm", "transparent_hugepages"),
        f"kernel default unknown: {missing}")


def _units(host: Host, setting: str, allowed: list[str], b: ThpBoot) -> None:
    """Enabled services writing the file (the last one wins)."""
    for v, _path, c in sysfs_writes(host, f"transparent_hugepage/{setting}"):
        b.value, b.source, b.explicit = v, f"{c.unit} ({c.file.lstrip('/')}:{c.line})", True
        b.unit = c.unit
        b.evidence.append(Evidence.file(c.file, c.line, c.text))
        if v not in allowed and c.file != FIX_UNIT:
            b.competing.append(f"{b.source} sets {v}: change or disable it")


def _tuned(host: Host, setting: str, allowed: list[str], b: ThpBoot) -> None:
    """tuned ``[vm]`` (``transparent_hugepages``, or its old name, for ``enabled``)."""
    from aiaudit.linux.rootkind import units_run
    from aiaudit.linux.tuned import profiles as tuned

    if not units_run(host):  # tuned.service is a unit: nothing starts it
        return
    st = tuned.load(host)
    keys = ("transparent_hugepages", "transparent_hugepage") if setting == "enabled" \
        else ("transparent_hugepage.defrag",)
    for k in keys:
        o = st.get("vm", k)
        if o is None:
            continue
        b.value, b.explicit, b.unit = o.value.strip(), True, "tuned.service"
        b.source = f"{st.describe()} [vm] {k} ({o.file.lstrip('/')}:{o.line})"
        b.evidence.append(Evidence.file(o.file, o.line, f"{k}={o.value}"))
        if b.value not in allowed:
            # tuned writes sysfs after boot: it beats any boot parameter or unit
            b.competing.append(f"{b.source} sets {b.value}: change it in the tuned profile")
        return


def boot_thp(host: Host, setting: str, allowed: list[str]) -> ThpBoot:
    """``transparent_hugepage/<setting>`` (``enabled`` or ``defrag``) at the next boot, with
    the settings outside ``allowed`` a fix cannot override."""
    what = f"transparent_hugepage/{setting}"
    unknown = None
    if setting == "defrag":
        b = ThpBoot("madvise", "kernel default (since 4.6)",
                    evidence=[Evidence.default("THP defrag default", "madvise")])
    else:
        b, unknown = _enabled_default(host, what)
    _units(host, setting, allowed, b)
    _tuned(host, setting, allowed, b)
    if b.value is None and unknown is not None:  # nothing set it at boot
        b.evidence.append(unknown)
    return b


def cmdline_unknown(host: Host) -> str:
    """Why the next boot's ``transparent_hugepage=`` cannot be known from this root (a
    stateless image whose provisioner passes the command line), or ``""``."""
    from aiaudit.linux.boot import cmdline as boot

    cfg = boot.load(host)
    return cfg.unknown if cfg.booted is None else ""
