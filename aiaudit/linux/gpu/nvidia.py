"""NVIDIA driver version strings: ``/proc/driver/nvidia/version``, library file names,
``nvidia-smi --format=csv`` output.

Sources: ``kernel-open/nvidia/nv-procfs.c`` (``"NVRM version: %s\\nGCC version:  %s\\n"``),
``MODULE_VERSION(NV_VERSION_STRING)`` for ``/sys/module/nvidia/version``; driver versions have
two or three numeric components (``570.26``, ``535.129.03``) and compare per component.
"""

from __future__ import annotations

from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

_VERSION = lazy_pattern(r"^\d{2,4}\.\d{1,3}(?:\.\d{1,3})?$")
_PROC = lazy_pattern(
    r"NVRM version:\s+NVIDIA UNIX\s+(?:(Open)\s+)?(?:(\S+)\s+)?Kernel Module"
    r"(?:\s+for\s+(\S+))?\s+(\d+(?:\.\d+){1,2})\b"
)


def parse_version(text: str) -> tuple[int, ...]:
    """``"535.129.03"`` -> ``(535, 129, 3)``; two or three numeric components."""
    s = text.strip()
    if not _VERSION().match(s):
        raise ParseError(f"not an NVIDIA driver version: {s[:40]!r}")
    return tuple(int(p) for p in s.split("."))


def is_version(text: str) -> bool:
    """True if ``text`` looks like a driver version (``570.26``, ``535.129.03``)."""
    return bool(_VERSION().match(text.strip()))


def branch(version: str) -> int:
    """The driver branch (first component): ``"535.129.03"`` -> ``535``."""
    return parse_version(version)[0]


@record
class ProcVersion:
    """First line of ``/proc/driver/nvidia/version``."""

    version: str
    open: bool
    """The open kernel module (``NVIDIA UNIX Open Kernel Module for x86_64``)."""
    arch: str | None
    line: str


def parse_proc_version(text: str) -> ProcVersion:
    """Parse ``/proc/driver/nvidia/version``.  Proprietary: ``NVRM version: NVIDIA UNIX
    x86_64 Kernel Module  535.129.03  Thu Oct 19 ...``; open: ``NVRM version: NVIDIA UNIX Open
    Kernel Module for x86_64  550.54.14  Release Build ...`` (also ``aarch64``)."""
    for line in text.splitlines():
        if not line.startswith("NVRM version:"):
            continue
        m = _PROC().search(line)
        if not m:
            raise ParseError(f"unrecognised NVRM version line: {line[:120]!r}")
        version = m.group(4)
        parse_version(version)
        return ProcVersion(version, bool(m.group(1)), m.group(3) or m.group(2), line.strip())
    raise ParseError("no 'NVRM version:' line")


def lib_version(filename: str, stem: str) -> str | None:
    """Driver version in a library file name: ``lib_version("libcuda.so.535.129.03",
    "libcuda.so")`` -> ``"535.129.03"``; ``None`` for ``libcuda.so.1`` or other names."""
    prefix = stem + "."
    if not filename.startswith(prefix):
        return None
    rest = filename[len(prefix):]
    return rest if _VERSION().match(rest) else None


@record
class GpuPersistence:
    """One line of ``nvidia-smi --query-gpu=index,pci.bus_id,persistence_mode
    --format=csv,noheader``."""

    index: str
    bus_id: str
    mode: str
    """``Enabled`` or ``Disabled`` (``[N/A]`` on platforms without it)."""


def parse_persistence_csv(text: str) -> list[GpuPersistence]:
    """Parse the CSV lines (``0, 00000000:07:00.0, Enabled``); at least one GPU."""
    out: list[GpuPersistence] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3 or not parts[0].isdigit():
            raise ParseError(f"unexpected nvidia-smi output: {line[:120]!r}", line=n)
        out.append(GpuPersistence(*parts))
    if not out:
        raise ParseError("nvidia-smi listed no GPU")
    return out
