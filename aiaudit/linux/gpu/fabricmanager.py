"""NVIDIA Fabric Manager: whether it runs (live) and what its configuration asks (files).

Sources: the Fabric Manager User Guide (docs.nvidia.com/datacenter/tesla/
fabric-manager-user-guide): the daemon ``/usr/bin/nv-fabricmanager`` is started by
``nvidia-fabricmanager.service`` with ``-c /usr/share/nvidia/nvswitch/fabricmanager.cfg``;
the file holds ``KEY=VALUE`` lines (``#`` comments), among them ``FABRIC_MODE`` (0: bare
metal, every GPU and NVSwitch owned by this host; 1: shared NVSwitch multitenancy; 2: vGPU
multitenancy; default 0).  A process's ``comm`` is its name cut to 15 characters
(``TASK_COMM_LEN`` 16 with the NUL), so the daemon shows as ``nv-fabricmanage``.
"""

from __future__ import annotations

from aiaudit.core.errors import NotFound
from aiaudit.core.host import Host
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

CONFIG = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"
COMM = "nv-fabricmanage"
"""``/proc/<pid>/comm`` of ``nv-fabricmanager`` (15 characters)."""
FABRIC_MODES = {0: "bare metal (full passthrough)", 1: "shared NVSwitch multitenancy",
                2: "vGPU multitenancy"}
_LINE = lazy_pattern(r"^\s*([A-Z][A-Z0-9_]{0,63})\s*=\s*(.*?)\s*$")


@record
class Setting:
    """One ``KEY=VALUE`` of the configuration."""

    value: str
    line: int


def parse_config(text: str) -> dict[str, Setting]:
    """``KEY=VALUE`` lines; ``#`` starts a comment line; the last assignment wins."""
    out: dict[str, Setting] = {}
    for n, raw in enumerate(text.splitlines()[:10000], 1):
        if raw.lstrip().startswith("#"):
            continue
        m = _LINE().match(raw)
        if m:
            out[m.group(1)] = Setting(m.group(2), n)
    return out


def config(host: Host) -> dict[str, Setting] | None:
    """The installed configuration (``None``: no file; another read error raises)."""
    try:
        text = host.read_text(CONFIG)
    except NotFound:
        return None
    return parse_config(text)


def running_pid(host: Host) -> str | None:
    """The pid of a running ``nv-fabricmanager`` (live only)."""
    from aiaudit.linux.procs import proc_of

    return proc_of(host, COMM) if host.live else None
