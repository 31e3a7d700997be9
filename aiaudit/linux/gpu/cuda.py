"""CUDA toolkit versions and NVIDIA's minimum-driver tables.

``version.json`` (CUDA >= 11.1): ``{"cuda": {"name": "CUDA SDK", "version": "12.4.1"},
"cuda_cudart": {"version": "12.4.127"}, ...}``; the top version may carry a build date instead
of the update number (``11.8.20220929``).  ``version.txt`` (CUDA <= 11.0): ``CUDA Version
10.2.89`` (the third number is a build, not the update).  A toolkit assembled from NVIDIA's
pip wheels has neither: its version is read, without running anything, from the wheels'
``*.dist-info`` names (``nvidia_cuda_runtime_cu12-12.4.127``, ``nvidia_cuda_runtime-13.0.96``
for CUDA 13), from ``cuda.h`` (``#define CUDA_VERSION 13000``: major * 1000 + minor * 10)
or from the banner string inside the ``nvcc`` binary (``Cuda compilation tools, release
13.0, V13.0.88``, what ``nvcc --version`` prints).  The tables are CUDA release notes
Table 2 (minor-version compatibility, per CUDA major) and Table 3 (driver shipped with each
toolkit release).
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

_NUM = lazy_pattern(r"^\d{1,18}(?:\.\d{1,18}){0,2}$")  # 18 digits: any real version


def vtuple(text: str) -> tuple[int, ...]:
    """``"12.4.1"`` -> ``(12, 4, 1)``; one to three numeric components."""
    s = str(text).strip()
    if not _NUM().match(s):
        raise ParseError(f"not a numeric version: {s[:40]!r}")
    return tuple(int(p) for p in s.split("."))


def vstr(v: tuple[int, ...]) -> str:
    """``(12, 4, 1)`` -> ``"12.4.1"``."""
    return ".".join(str(p) for p in v)


@record
class CudaVersion:
    """A CUDA release as far as it can be known."""

    major: int
    minor: int
    update: int | None
    """Update number (``12.4.1`` -> 1); ``None`` when only major.minor is known."""
    raw: str
    """The text it came from (``12.4.1``, ``11.8.20220929``, ``CUDA Version 10.2.89``)."""

    @property
    def text(self) -> str:
        """``12.4.1``, or ``12.4`` when the update is unknown."""
        base = f"{self.major}.{self.minor}"
        return base if self.update is None else f"{base}.{self.update}"


def cuda_version(text: str, *, exact_update: bool = True) -> CudaVersion:
    """A CUDA version string: ``"12.1"`` (torch.version.cuda), ``"12.4.1"``; a third
    component over 99 is a build or date, not an update (``11.8.20220929``)."""
    v = vtuple(text)
    if len(v) < 2:
        raise ParseError(f"CUDA version without a minor number: {text!r}")
    update = v[2] if len(v) > 2 and v[2] < 100 and exact_update else None
    if len(v) == 2 and exact_update:
        update = None
    return CudaVersion(v[0], v[1], update, text.strip())


def parse_version_json(text: str) -> CudaVersion:
    """Toolkit release from ``version.json``."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"version.json is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ParseError("version.json is not an object")
    for key in ("cuda", "cuda_cudart", "cuda_nvcc"):
        entry = doc.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            # only the top "cuda" entry carries the update number; the component
            # versions (12.4.127) have a build number in third place.
            return cuda_version(entry["version"], exact_update=key == "cuda")
    raise ParseError("version.json has no cuda version")


def parse_version_txt(text: str) -> CudaVersion:
    """Toolkit release from ``version.txt`` (``CUDA Version 10.2.89``)."""
    m = re.search(r"CUDA Version\s+(\d+\.\d+(?:\.\d+)?)", text)
    if not m:
        raise ParseError("version.txt has no 'CUDA Version' line")
    return cuda_version(m.group(1), exact_update=False)


_CUDA_H = lazy_pattern(r"^\s*#\s*define\s+CUDA_VERSION\s+(\d{4,6})\b")
_NVCC = lazy_pattern(rb"Cuda compilation tools, release (\d{1,3})\.(\d{1,3}), V([0-9.]{1,20})")

NVCC_BANNER_MAX = 200
"""Longest stretch a banner match can span (kept across chunk boundaries)."""


def parse_cuda_h(text: str) -> CudaVersion:
    """Toolkit release from ``cuda.h``'s ``#define CUDA_VERSION 12040`` (12.4; the update is
    not in it)."""
    for line in text.splitlines():
        m = _CUDA_H().match(line)
        if m:
            v = int(m.group(1))
            return CudaVersion(v // 1000, (v % 1000) // 10, None, f"CUDA_VERSION {v}")
    raise ParseError("cuda.h has no '#define CUDA_VERSION'")


def nvcc_banner(data: bytes) -> CudaVersion | None:
    """Toolkit release from the bytes of the ``nvcc`` binary (or a part of it): the
    ``Cuda compilation tools, release 13.0, V13.0.88`` string ``nvcc --version`` prints."""
    m = _NVCC().search(data)
    if not m:
        return None
    return CudaVersion(int(m.group(1)), int(m.group(2)), None,
                       f"release {int(m.group(1))}.{int(m.group(2))}, "
                       f"V{m.group(3).decode('ascii')}")


def wheel_release(name: str, version: str) -> CudaVersion | None:
    """The CUDA release of an NVIDIA toolkit wheel (``nvidia-cuda-runtime-cu12`` 12.4.127,
    ``nvidia-cuda-runtime`` 13.0.96, likewise ``nvidia-cuda-nvcc``): 12.4, 13.0."""
    if not re.fullmatch(r"nvidia-cuda-(?:runtime|nvcc)(?:-cu\d{2})?", name):
        return None
    try:
        return cuda_version(version, exact_update=False)
    except ParseError:
        return None


@record
class MinorCompat:
    """Table 2 row: every CUDA ``major``.x runs on drivers >= ``min_driver``."""

    cuda_major: int
    min_driver: str
    minor_compat_below: str | None = None


@record
class ToolkitDriver:
    """Table 3 row: the driver shipped with toolkit ``cuda``."""

    cuda: tuple[int, ...]
    min_driver: str


@record
class DriverTable:
    """NVIDIA's minimum-driver tables, with where and when they were read."""

    minor_compat: tuple[MinorCompat, ...]
    toolkits: tuple[ToolkitDriver, ...]
    source: Mapping[str, str]
    read: str

    def minor_compat_min(self, major: int) -> MinorCompat | None:
        """Table 2 row for a CUDA major, or ``None`` (no minor-version compatibility)."""
        for row in self.minor_compat:
            if row.cuda_major == major:
                return row
        return None

    def newest(self) -> tuple[int, ...]:
        """Newest toolkit release in Table 3."""
        return self.toolkits[-1].cuda

    def toolkit_min(self, v: CudaVersion) -> ToolkitDriver | None:
        """Table 3 row for a release.  With the update known: the newest row at or below
        it within the same major.minor; with it unknown: the first row of the minor (the
        lowest requirement, a lower bound).  ``None`` when the minor is not in the table."""
        same = [r for r in self.toolkits if r.cuda[:2] == (v.major, v.minor)]
        if not same:
            return None
        if v.update is None:
            return same[0]
        below = [r for r in same if _pad(r.cuda) <= (v.major, v.minor, v.update)]
        return below[-1] if below else same[0]

    def required(self, v: CudaVersion, full: bool) -> tuple[str, str] | None:
        """(minimum driver, which table decided) for a CUDA version: Table 2 by major
        (CUDA >= 11) unless ``full``; Table 3 for the release otherwise (and for CUDA < 11,
        which has no minor-version compatibility)."""
        if not full:
            row = self.minor_compat_min(v.major)
            if row is not None:
                return row.min_driver, f"minor-version compatibility for CUDA {v.major}.x"
        trow = self.toolkit_min(v)
        if trow is None:
            return None
        return trow.min_driver, f"driver of the CUDA {vstr(trow.cuda)} release"


def _pad(v: tuple[int, ...]) -> tuple[int, ...]:
    return (*v, 0, 0, 0)[:3]


def parse_driver_table(doc: Any) -> DriverTable:
    """Validate the shipped table (``checks/data/cuda_drivers.json``): versions parse,
    rows ascend, drivers never go down as the toolkit goes up."""
    if not isinstance(doc, dict):
        raise ParseError("driver table is not an object")
    try:
        source = dict(doc["source"])
        read = str(doc["read"])
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", read):
            raise ParseError(f"'read' is not a date: {read!r}")
        mc = tuple(MinorCompat(int(r["cuda_major"]), str(r["min_driver"]),
                               r.get("minor_compat_below"))
                   for r in doc["minor_version_compat"])
        tk = tuple(ToolkitDriver(vtuple(r["cuda"]), str(r["min_driver"]))
                   for r in doc["toolkit_driver"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(f"malformed driver table: {exc!r}") from None
    for rows, key in ((mc, "minor_version_compat"), (tk, "toolkit_driver")):
        prev_k: tuple[int, ...] | None = None
        prev_d: tuple[int, ...] | None = None
        for r in rows:
            k = (r.cuda_major,) if isinstance(r, MinorCompat) else _pad(r.cuda)
            d = vtuple(r.min_driver)
            if prev_k is not None and k <= prev_k:
                raise ParseError(f"{key}: {vstr(k)} is not after {vstr(prev_k)}")
            if prev_d is not None and d < prev_d:
                raise ParseError(f"{key}: driver {r.min_driver} for {vstr(k)} is lower "
                                 f"than the previous row's")
            prev_k, prev_d = k, d
    if not mc or not tk:
        raise ParseError("driver table has an empty section")
    return DriverTable(mc, tk, source, read)


def driver_ge(driver: str, minimum: str) -> bool:
    """``driver >= minimum``, per numeric component (``580.95.05 >= 580`` is true)."""
    return vtuple(driver) >= vtuple(minimum)
