"""amdgpu RAS in sysfs: error counters per IP block and the retired (bad) VRAM pages.

Sources: drivers/gpu/drm/amd/amdgpu/amdgpu_ras.c, "AMDGPU RAS sysfs Error Count Interface"
(``/sys/class/drm/card<N>/device/ras/<block>_err_count``: ``ue: <n>`` and ``ce: <n>``
lines, uncorrectable and correctable errors since the driver loaded) and
``amdgpu_ras_aca_sysfs_read`` (with ACA, MI300 and later: ``ras/aca_<block>`` with ``ue``,
``ce`` and ``de``, deferred errors: uncorrectable errors whose poisoned data was contained,
reported per error on MI300 (the amd64_edac MI300 row-retirement patch)); both print
``Query currently inaccessible`` while a GPU reset is under way.  "AMDGPU RAS sysfs
gpu_vram_bad_pages Interface": one ``<pfn> : <size> : <flag>`` line per page (``%08x``
hex), flag ``R`` reserved (retired, never used again), ``P`` pending (retired at the next
reservation window), ``F`` could not be reserved.  ``ras/features`` is ``feature mask:
0x<hex>`` (one bit per block with RAS enabled).  The files exist only on GPUs with RAS
(Instinct; ``bad_page_threshold=0`` removes ``gpu_vram_bad_pages``).  The retired pages
are kept in the board's EEPROM and reloaded at every boot.

The driver's threshold (amdgpu_ras.c ``amdgpu_ras_validate_threshold``): module parameter
``bad_page_threshold`` -1 (default) gives ``(reserved bytes >> 21) << 4``, 128 pages for
the 16 MiB MI200/MI300 reserve; -2 one page per 100 MiB of VRAM; a positive value is used
as is; 0 disables retirement.  amd-smi reports the threshold exceeded when the reserved
pages are more than it.
"""

from __future__ import annotations

from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

INACCESSIBLE = "Query currently inaccessible"
"""What a counter file says while a GPU reset is under way."""
DEFAULT_THRESHOLD = 128
"""Retired pages the driver allows by default on MI200/MI300 ((16 MiB >> 21) << 4)."""
MAX_BAD_PAGE_LINES = 100_000
"""Most bad-page lines parsed (the EEPROM table holds a few thousand records)."""

_COUNT = lazy_pattern(r"(ue|ce|de): (\d{1,20})")
_PAGE = lazy_pattern(r"0x([0-9a-fA-F]{1,16}) : 0x([0-9a-fA-F]{1,16}) : ([RPF])")
_FEATURES = lazy_pattern(r"feature mask: 0x([0-9a-fA-F]{1,16})")


@record
class Counts:
    """One block's error counts."""

    ue: int
    ce: int
    de: int = 0
    """Deferred errors (``aca_*`` files only)."""


def parse_counts(text: str) -> Counts | None:
    """``ue: 0\\nce: 1`` (and ``de: 0``) -> :class:`Counts`; ``None`` for
    :data:`INACCESSIBLE`; anything else is a :class:`ParseError`."""
    if text.strip() == INACCESSIBLE:
        return None
    got: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        m = _COUNT().fullmatch(raw.strip())
        if not m or m.group(1) in got:
            raise ParseError(f"not an error count line: {raw[:60]!r}", line=n)
        got[m.group(1)] = int(m.group(2))
    if "ue" not in got or "ce" not in got:
        raise ParseError("no ue and ce counts")
    return Counts(got["ue"], got["ce"], got.get("de", 0))


@record
class BadPages:
    """The retired-page table of one GPU."""

    reserved: int
    pending: int
    failed: int
    first: tuple[str, ...] = ()
    """The first few lines (for evidence)."""

    @property
    def total(self) -> int:
        """Every page of the table."""
        return self.reserved + self.pending + self.failed


def parse_bad_pages(text: str) -> BadPages:
    """The ``gpu_vram_bad_pages`` lines; a line of another shape is a :class:`ParseError`
    naming it."""
    counts = {"R": 0, "P": 0, "F": 0}
    first: list[str] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if n > MAX_BAD_PAGE_LINES:
            raise ParseError(f"more than {MAX_BAD_PAGE_LINES} lines", line=n)
        m = _PAGE().fullmatch(line)
        if not m:
            raise ParseError(f"not a bad page line: {line[:60]!r}", line=n)
        counts[m.group(3)] += 1
        if len(first) < 3:
            first.append(line)
    return BadPages(counts["R"], counts["P"], counts["F"], tuple(first))


def parse_features(text: str) -> int:
    """``feature mask: 0x...`` -> the mask."""
    m = _FEATURES().fullmatch(text.strip())
    if not m:
        raise ParseError(f"not a RAS feature mask: {text.strip()[:60]!r}")
    return int(m.group(1), 16)


def block_of(filename: str) -> str | None:
    """``umc`` for ``umc_err_count`` or ``aca_umc``; ``None`` for other files."""
    if filename.endswith("_err_count"):
        return filename[:-len("_err_count")] or None
    if filename.startswith("aca_"):
        return filename[4:] or None
    return None


def driver_threshold(param: int | None, vram_bytes: int | None) -> tuple[int | None, str]:
    """The driver's retired-page threshold from the ``bad_page_threshold`` module parameter
    (``None``: not readable, the default -1 assumed) and the VRAM size: (threshold or
    ``None`` when retirement is off, how it was derived)."""
    if param is None or param == -1:
        return DEFAULT_THRESHOLD, ("amdgpu's default (bad_page_threshold=-1: 16 MiB reserve "
                                   "-> 128 pages on MI200/MI300)")
    if param == 0:
        return None, "bad_page_threshold=0: the driver does not retire pages"
    if param == -2:
        if not vram_bytes:
            return DEFAULT_THRESHOLD, ("bad_page_threshold=-2 (one page per 100 MiB of VRAM; "
                                       "VRAM size unknown: 128 assumed)")
        return vram_bytes // (100 * 1024 * 1024), "bad_page_threshold=-2 (one page per 100 MiB)"
    if param > 0:
        return param, f"bad_page_threshold={param}"
    return DEFAULT_THRESHOLD, f"bad_page_threshold={param} (not a documented value)"
