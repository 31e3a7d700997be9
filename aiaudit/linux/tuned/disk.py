"""tuned's ``[disk]`` plugin: which disks a unit applies to and the values it writes.

Sources: redhat-performance/tuned ``tuned/plugins/plugin_disk.py`` (``elevator``,
``readahead`` with ``_parse_ra``: KB, an ``s`` suffix counts 512-byte sectors, a leading
``>`` only raises), ``tuned/utils/commands.py`` ``devstr2devs`` and ``plugins/base.py``
(``devices=``: comma-separated globs, ``!`` negates).  tuned applies its profile after udev
coldplug, so what it writes wins over udev rules.
"""

from __future__ import annotations

import fnmatch

from aiaudit.core.host import Host
from aiaudit.core.parsing import MAX_INT_DIGITS
from aiaudit.linux.tuned import conf as tp
from aiaudit.linux.tuned import profiles


def devices_match(spec: str, name: str) -> bool:
    """Whether tuned ``devices=`` ``spec`` selects the device ``name``."""
    words = [p.strip() for p in spec.split(",")]
    pos = [p for p in words if p and not p.startswith("!")]
    neg = [p[1:] for p in words if p.startswith("!")]
    if any(fnmatch.fnmatchcase(name, n) for n in neg):
        return False
    return not pos or any(fnmatch.fnmatchcase(name, p) for p in pos)


def disk_option(host: Host, name: str, key: str) -> tp.Option | None:
    """The ``key`` option of the last enabled ``[disk]`` unit of the active profile that
    applies to disk ``name`` (``None`` when tuned is not active or no unit sets it)."""
    st = profiles.load(host)
    if not st.active or st.profile is None:
        return None
    found = None
    for unit in st.profile.units.values():
        if unit.type != "disk" or not unit.enabled or key not in unit.options:
            continue
        devs = unit.options.get("devices")
        if devs is not None and not devices_match(devs.value, name):
            continue
        found = unit.options[key]
    return found


def parse_readahead(value: str) -> str | None:
    """tuned ``readahead=`` -> KB as text (``"8192 s"`` -> ``"4096"``; ``">4096"`` ->
    ``"4096"``), ``None`` when it is not a number."""
    v = value.strip().lstrip(">").strip()
    parts = v.split(None, 1)
    if not parts or not parts[0].isdigit() or len(parts[0]) > MAX_INT_DIGITS:
        return None
    n = int(parts[0])
    if len(parts) > 1 and parts[1].startswith("s"):
        n //= 2
    return str(n)
