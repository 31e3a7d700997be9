"""What tuned writes to a sysctl key after systemd-sysctl (SEMANTICS §3.3/§3.4).

tuned starts after systemd-sysctl and writes its active profile's ``[sysctl]`` options
(keys mapped naively, ``.`` to ``/``); with ``reapply_sysctl`` on (``tuned-main.conf``,
default 1) it then re-applies the admin files of ``/run/sysctl.d``, ``/etc/sysctl.d`` and
``/etc/sysctl.conf`` (never ``/usr/lib`` or ``/usr/local/lib``: tuned
``plugins/plugin_sysctl.py`` ``_apply_system_sysctl``), so an admin file still wins over
the profile.  The tuned profile modules are imported only when a sysctl rule asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.sysctl import conf as sp
from aiaudit.linux.sysctl.files import SysctlConfig
from aiaudit.linux.sysctl.resolved import Resolved

if TYPE_CHECKING:
    from aiaudit.linux.tuned.conf import Option
    from aiaudit.linux.tuned.profiles import TunedState

_NOT_KEYS = ("type", "enabled", "replace", "devices")
"""Options of a ``[sysctl]`` unit that are tuned's own, not sysctl keys."""


@record
class TunedDecision:
    """What tuned does to a key after systemd-sysctl (SEMANTICS §3.3)."""

    value: str
    evidence: Evidence
    text: str
    """``set by tuned profile X (file:line)`` or ``... then re-applied from file:line``."""
    reapplied: bool
    """True when a re-applied admin file, not the profile, decided."""


def tuned_decide(host: Host, cfg: SysctlConfig | Resolved, key: str) -> TunedDecision | None:
    """The value tuned leaves in ``key`` (slash form) when it starts at boot, or ``None``
    when tuned is not active or its profile does not set the key: the profile's value, or
    the last admin line re-applied after it (``reapply_sysctl``)."""
    from aiaudit.linux.tuned import profiles as tuned

    st = tuned.load(host)
    if not st.active or st.profile is None:
        return None
    opt = profile_option(st, key)
    if opt is None:
        return None
    where = f"{opt.file.lstrip('/')}:{opt.line}"
    if tuned_reapplies(host):
        again = _reapplied(cfg, key)
        if again:
            last = again[-1]
            return TunedDecision(last.value or "", Evidence.file(last.file, last.line,
                                                                 last.raw.strip()),
                                 f"{last.value} (tuned {st.describe()} sets {opt.value} at "
                                 f"{where}, then re-applies {last.source})", True)
    ev = Evidence.file(opt.file, opt.line, f"{key.replace('/', '.')}={opt.value}")
    return TunedDecision(opt.value, ev, f"{opt.value} (set by {st.describe()} at {where}, "
                         "after systemd-sysctl)", False)


def profile_option(st: TunedState, key: str) -> Option | None:
    """The last enabled ``[sysctl]`` option of the active profile that names ``key``
    (slash form), or ``None``."""
    opt = None
    units = st.profile.units.values() if st.profile is not None else ()
    for unit in units:
        if unit.type != "sysctl" or not unit.enabled:
            continue
        for k, o in unit.options.items():
            if k not in _NOT_KEYS and k.strip().replace(".", "/") == key:
                opt = o
    return opt


def _reapplied(cfg: SysctlConfig | Resolved, key: str) -> list[sp.Entry]:
    """The literal admin lines tuned re-applies for ``key``, in order."""
    if isinstance(cfg, Resolved):
        return cfg.tuned_reapplied(key)
    return [e for e in cfg.tuned_reapply_entries
            if not e.is_glob and e.key == key and e.value is not None]


def tuned_reapplies(host: Host) -> bool:
    """tuned-main.conf ``reapply_sysctl`` (default 1; an unreadable file: the default)."""
    from aiaudit.linux.tuned import profiles as tuned

    try:
        text = host.try_read_text(tuned.MAIN_CONF) or ""
    except HostError:
        return True
    for raw in text.splitlines():
        k, sep, v = raw.partition("=")
        if sep and k.strip() == "reapply_sysctl":
            return v.strip().lower() not in ("0", "false", "no", "off")
    return True
