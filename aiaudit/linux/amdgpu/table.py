"""AMD's compatibility data (``checks/data/amd_rocm.json``): which ROCm user-space releases
each amdgpu kernel-mode driver (KMD) release supports, the amdgpu module version each driver
release ships, the ROCm release each driver release came with, and the PCI device ids of
Instinct GPUs.

Sources (with their dates, in the file): ROCm's "User and kernel-space support matrix"
(rows keyed by the ROCm release the KMD came with, ``6.4.x``..., and since ROCm 7 by the
AMD GPU Driver release, ``30.10.x``), the AMD GPU Driver documentation, and amdgpu-dkms
package names on repo.radeon.com (``amdgpu-dkms_6.12.12.60404-...``: module 6.12.12 of the
driver that shipped with ROCm 6.4.4).
"""

from __future__ import annotations

import json
import re
from typing import Any

from aiaudit.core import resources
from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

DATA = "data/amd_rocm.json"
"""The table, as package data of ``aiaudit.checks``."""
_VERSION = lazy_pattern(r"(\d{1,3})\.(\d{1,3})(?:\.(\d{1,6}))?")


@record
class Table:
    """The parsed compatibility table."""

    read: str
    """When the table was last checked against AMD's pages (ISO date)."""
    sources: dict[str, str]
    kmd: dict[str, tuple[str, ...]]
    """KMD release line (``6.4``, ``30.10``) -> ROCm user-space lines it supports."""
    rocm_to_kmd: dict[str, str]
    """ROCm release line -> the KMD line of the driver it shipped with, where they differ
    (``7.0`` -> ``30.10``)."""
    modules: dict[str, str]
    """amdgpu module version (``6.12.12``) -> KMD line."""
    instinct: dict[int, str]
    """PCI device id -> Instinct product name."""

    def source(self, row: str) -> str:
        """The citation of a row's source key."""
        return self.sources.get(row, row)


def line(version: str) -> str | None:
    """``6.2`` for ``6.2.0``, ``6.2.0-66``, ``6.2.41133-dd7f95766``, ``30.10.1``; ``None``
    when ``version`` does not start with two numbers."""
    m = _VERSION().match(version.strip())
    return f"{int(m.group(1))}.{int(m.group(2))}" if m else None


def line_key(v: str) -> tuple[int, ...]:
    """Sort key of a release line (``6.10`` after ``6.4``)."""
    return tuple(int(p) for p in v.split(".") if p.isdigit())


def release_of_suffix(digits: str) -> str | None:
    """The release an amdgpu-dkms version suffix encodes: ``60404`` -> ``6.4.4`` (ROCm),
    ``30100100`` -> ``30.10.1`` (AMD GPU Driver); ``None`` for any other shape."""
    if re.fullmatch(r"\d{5}", digits):
        return f"{int(digits[0])}.{int(digits[1:3])}.{int(digits[3:5])}"
    if re.fullmatch(r"\d{8}", digits):
        return f"{int(digits[0:2])}.{int(digits[2:4])}.{int(digits[4:6])}"
    return None


def _rows(doc: dict[str, Any], key: str) -> list[dict[str, Any]]:
    rows = doc.get(key)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ParseError(f"{DATA}: {key} is not a list of objects")
    return rows


def parse(doc: Any) -> Table:
    """Validate and index the JSON document; :class:`ParseError` names what is wrong."""
    if not isinstance(doc, dict) or not isinstance(doc.get("source"), dict):
        raise ParseError(f"{DATA}: not an object with a source")
    kmd: dict[str, tuple[str, ...]] = {}
    for r in _rows(doc, "kmd_userspace"):
        if line(str(r.get("kmd", ""))) != r.get("kmd") or not r.get("userspace") \
                or any(line(str(u)) != u for u in r["userspace"]):
            raise ParseError(f"{DATA}: bad kmd_userspace row {r!r}")
        if r.get("source") not in doc["source"]:
            raise ParseError(f"{DATA}: row {r['kmd']} cites an unknown source")
        kmd[r["kmd"]] = tuple(r["userspace"])
    modules: dict[str, str] = {}
    for r in _rows(doc, "module_versions"):
        if r.get("kmd") not in kmd or not _VERSION().fullmatch(str(r.get("module"))) \
                or not str(r.get("url", "")).startswith("https://"):
            raise ParseError(f"{DATA}: bad module_versions row {r!r}")
        modules[r["module"]] = r["kmd"]
    aliases: dict[str, str] = {}
    for r in _rows(doc, "rocm_to_kmd"):
        if r.get("kmd") not in kmd or line(str(r.get("rocm", ""))) != r.get("rocm"):
            raise ParseError(f"{DATA}: bad rocm_to_kmd row {r!r}")
        aliases[r["rocm"]] = r["kmd"]
    instinct: dict[int, str] = {}
    for r in _rows(doc, "instinct"):
        if not re.fullmatch(r"0x[0-9a-f]{4}", str(r.get("device"))) or not r.get("name"):
            raise ParseError(f"{DATA}: bad instinct row {r!r}")
        instinct[int(r["device"], 16)] = str(r["name"])
    return Table(str(doc.get("read", "")), dict(doc["source"]), kmd, aliases, modules,
                 instinct)


_TABLE: Table | None = None


def table() -> Table:
    """The shipped table (read once per process)."""
    global _TABLE
    if _TABLE is None:
        _TABLE = parse(json.loads(resources.read_text("aiaudit.checks", DATA)))
    return _TABLE


def kmd_of_release(t: Table, release: str) -> str | None:
    """The KMD line of the driver that shipped with ROCm (or AMD GPU Driver) ``release``:
    ``6.4.4`` -> ``6.4``, ``30.10.1`` -> ``30.10``, ``7.0.2`` -> ``30.10``."""
    ln = line(release)
    if ln is None:
        return None
    ln = t.rocm_to_kmd.get(ln, ln)
    return ln if ln in t.kmd else None


def supports(t: Table, kmd: str, userspace: str) -> bool | None:
    """Whether KMD line ``kmd`` supports ROCm user-space ``userspace`` (any version of it):
    ``None`` when ``kmd`` is not in the table."""
    rows = t.kmd.get(kmd)
    if rows is None:
        return None
    return line(userspace) in rows
