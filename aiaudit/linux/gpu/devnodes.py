"""The NVIDIA device nodes a CUDA job opens, and the owner and mode the driver gives them.

How the driver decides (NVIDIA/nvidia-modprobe ``modprobe-utils/nvidia-modprobe-utils.c``
and ``.h``; nvidia-modprobe creates and repairs the nodes, the kernel modules only register
the majors):

- ``/dev/nvidiactl`` (major 195, minor 255) and ``/dev/nvidia<N>`` (195, N: the GPU's
  ``Device Minor`` in ``/proc/driver/nvidia/gpus/<bdf>/information``): character devices,
  owner, group and mode from ``/proc/driver/nvidia/params`` ``DeviceFileUID``,
  ``DeviceFileGID``, ``DeviceFileMode`` (decimal; defaults 0, 0, 0666); with
  ``ModifyDeviceFiles: 0`` the driver leaves them as the admin made them (then the mode is
  not judged);
- ``/dev/nvidia-uvm`` and ``/dev/nvidia-uvm-tools``: the ``nvidia-uvm`` major of
  ``/proc/devices``, minors 0 and 1, always root:root 0666;
- ``/dev/nvidia-caps/`` (a 0755 directory) and ``nvidia-cap<N>`` for each capability under
  ``/proc/driver/nvidia/capabilities`` (``mig/config``, ``mig/monitor``): the
  ``nvidia-caps`` major, minor ``DeviceFileMinor``, mode ``DeviceFileMode`` of that file
  (created on first use, e.g. by the container toolkit for MIG).

A node is what ``get_file_state_helper`` checks: it exists, is a character device of the
right major:minor, and has the owner, group and permission bits asked for.
"""

from __future__ import annotations

import os
import re
import stat as st

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

PARAMS = "/proc/driver/nvidia/params"
GPUS = "/proc/driver/nvidia/gpus"
CAPS = "/proc/driver/nvidia/capabilities"
NV_MAJOR = 195
CTL_MINOR = 255
DEFAULT_MODE = 0o666
_FIELD = lazy_pattern(r"^(?:NVreg_)?([A-Za-z]{1,40}): *(\d{1,10})[ \t]*$", re.M)


@record
class Want:
    """One node as the driver makes it (``mode`` ``None``: not judged)."""

    path: str
    major: int | None
    """``None``: the module that owns it is not loaded (no major in /proc/devices)."""
    minor: int
    uid: int
    gid: int
    mode: int | None
    source: str
    """Where the owner and mode come from."""


@record
class Seen:
    """What a node is on the host (``problem`` ``None``: as wanted)."""

    want: Want
    problem: str | None
    actual: str


def fields(text: str) -> dict[str, int]:
    """``Name: 123`` lines (``/proc/driver/nvidia/params``, capability files; an
    ``NVreg_`` prefix, as some drivers print the params, is dropped)."""
    return {m.group(1): int(m.group(2)) for m in _FIELD().finditer(text)}


def majors(host: Host) -> dict[str, int]:
    """Character-device majors by driver name, from ``/proc/devices``."""
    text = host.try_read_text("/proc/devices") or ""
    block = text.split("\nBlock devices:")[0]
    out: dict[str, int] = {}
    for line in block.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isascii() and parts[0].isdigit():
            out.setdefault(parts[1], int(parts[0]))
    return out


def gpu_minors(host: Host) -> list[tuple[str, int]]:
    """``(bdf, Device Minor)`` of each GPU the driver registered."""
    out = []
    for bdf in sorted(host.listdir(GPUS))[:64]:
        text = host.try_read_text(f"{GPUS}/{bdf}/information") or ""
        m = re.search(r"^Device Minor:\s*(\d{1,3})\s*$", text, re.M)
        if m:
            out.append((bdf, int(m.group(1))))
    return out


def _caps(host: Host, caps_major: int | None) -> list[Want]:
    out = []
    for cap in ("mig/config", "mig/monitor"):
        text = host.try_read_text(f"{CAPS}/{cap}")
        f = fields(text) if text else {}
        if "DeviceFileMinor" in f:
            modify = f.get("DeviceFileModify", 1)
            out.append(Want(f"/dev/nvidia-caps/nvidia-cap{f['DeviceFileMinor']}",
                            caps_major, f["DeviceFileMinor"], f.get("DeviceFileUID", 0),
                            f.get("DeviceFileGID", 0),
                            f.get("DeviceFileMode", 0o444) if modify else None,
                            f"{CAPS}/{cap}"))
    return out


def wanted(host: Host) -> list[Want]:
    """The nodes the loaded driver asks for (live only)."""
    p = fields(host.try_read_text(PARAMS) or "")
    modify = p.get("ModifyDeviceFiles", p.get("DeviceFileModify", 1))
    uid, gid = p.get("DeviceFileUID", 0), p.get("DeviceFileGID", 0)
    mode = p.get("DeviceFileMode", DEFAULT_MODE) if modify else None
    src = PARAMS if p else "nvidia-modprobe defaults (no /proc/driver/nvidia/params)"
    out = [Want("/dev/nvidiactl", NV_MAJOR, CTL_MINOR, uid, gid, mode, src)]
    out += [Want(f"/dev/nvidia{n}", NV_MAJOR, n, uid, gid, mode, src)
            for _, n in gpu_minors(host)]
    mj = majors(host)
    uvm = mj.get("nvidia-uvm")
    out += [Want("/dev/nvidia-uvm", uvm, 0, 0, 0, DEFAULT_MODE, "nvidia-modprobe (fixed)"),
            Want("/dev/nvidia-uvm-tools", uvm, 1, 0, 0, DEFAULT_MODE,
                 "nvidia-modprobe (fixed)")]
    return out + _caps(host, mj.get("nvidia-caps"))


def inspect(host: Host, w: Want) -> Seen:
    """Compare one node with what the driver makes."""
    if w.major is None:
        return Seen(w, "its kernel module is not loaded (no major in /proc/devices)",
                    "module not loaded")
    try:
        s = host.stat(w.path)
    except HostError:
        return Seen(w, "missing", "missing")
    got = (f"{'char' if st.S_ISCHR(s.st_mode) else 'not a char device'} "
           f"{os.major(s.st_rdev)}:{os.minor(s.st_rdev)} {s.st_uid}:{s.st_gid} "
           f"{st.S_IMODE(s.st_mode):04o}")
    if not st.S_ISCHR(s.st_mode) or (os.major(s.st_rdev), os.minor(s.st_rdev)) != (w.major,
                                                                               w.minor):
        return Seen(w, f"not the character device {w.major}:{w.minor}", got)
    if w.mode is not None and (st.S_IMODE(s.st_mode) & 0o777 != w.mode & 0o777
                               or s.st_uid != w.uid or s.st_gid != w.gid):
        return Seen(w, f"owner or mode differ from {w.uid}:{w.gid} {w.mode & 0o777:04o}",
                    got)
    return Seen(w, None, got)
