"""``nvidia-smi -q -x`` XML: per-GPU ECC, memory repairs, clock event reasons, power limits,
application clocks and modes, as the drivers of every branch from 375 to 595 write them.

The document is ``<nvidia_smi_log>`` (``driver_version``, ``cuda_version``, one
``<gpu id="00000000:1B:00.0">`` per GPU) as described by the DTD nvidia-smi names in its
DOCTYPE: ``nvsmi_device_v9.dtd`` (drivers 384), v10 (410-430), v11 (470-515), v12 (525-580),
v13 (590 and later).  What changed between them, all read here (the corpus of real captures
in ``tests/fixtures/gpu`` shows each):

- clock event reasons: ``clocks_throttle_reasons/clocks_throttle_reason_*`` until driver 530,
  ``clocks_event_reasons/clocks_event_reason_*`` after; values ``Active``/``Not Active``
  (``N/A`` for a reason the GPU does not have, e.g. Kepler's HW thermal slowdown);
- power limits: ``power_readings`` with ``power_limit`` (the one set with ``nvidia-smi -pl``),
  ``enforced_power_limit`` and ``default_power_limit`` before driver ~530 (and on some 525
  builds that already write schema v12); ``gpu_power_readings`` with
  ``requested_power_limit``, ``current_power_limit`` (enforced) and ``default_power_limit``
  after;
- ECC error counts: ``volatile/double_bit/total`` (Kepler to Volta drivers) or
  ``volatile/dram_uncorrectable`` with ``sram_uncorrectable`` (split into ``_parity`` and
  ``_secded`` from driver 535); per MIG instance
  ``mig_devices/mig_device/ecc_error_count/volatile_count/sram_uncorrectable``;
- memory repairs: ``retired_pages/pending_blacklist`` (v11+) and ``pending_retirement``
  (page retirement, Kepler to Volta), ``remapped_rows/remapped_row_pending`` and
  ``remapped_row_failure`` (row remapping, Ampere and later; the whole element is ``N/A``
  with MIG enabled and on GPUs without it), ``ecc_errors/channel_repair_pending`` and
  ``tpc_repair_pending`` (v13);
- memory counts (``gpu.memory_health``): ``ecc_errors/aggregate`` as ``volatile`` (with
  ``sram_threshold_exceeded`` from driver 535), ``retired_pages/*/retired_count``,
  ``remapped_rows/remapped_row_corr`` and ``_unc``, and
  ``row_remapper_histogram/row_remapper_histogram_none`` (``192 bank(s)``);
- values: ``N/A``, ``[N/A]``, ``Not Supported``, ``[Not Supported]``, ``Unknown Error``,
  ``Requested functionality has been deprecated`` (v13, e.g. application clocks) all mean
  "not reported" (:func:`value`); numbers carry units (``350.00 W``, ``1410 MHz``);
  Windows captures (``driver_model/current_dm`` WDDM or TCC) and vGPU guests
  (``gpu_virtualization_mode/virtualization_mode`` VGPU) report most limits as ``N/A``.

External entities are never resolved (ElementTree does not fetch DTDs); a document that
declares entities is refused outright, so no expansion can blow up memory.  The command is
run once per scan by :func:`query`, only when scanning the real ``/`` live.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable

from aiaudit.core.errors import CommandError, LiveStateUnavailable, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

MAX_XML = 16 * 1024 * 1024
"""Largest document parsed (8 GPUs with supported-clock tables are ~400 KiB)."""

SMI_ARGV = ("nvidia-smi", "-q", "-x")
"""The one nvidia-smi command every ``gpu.*`` rule shares (run once per scan)."""

_REASON_PREFIXES = ("clocks_event_reason_", "clocks_throttle_reason_")

NOT_REPORTED = frozenset({
    "n/a", "not supported", "unknown error", "requested functionality has been deprecated",
    "insufficient permissions", "not found", "not available", "err!", "unknown",
    "gpu access blocked by the operating system", "gpu requires reset"})
"""Values (lower case, brackets removed) that say the driver has nothing to report."""

_QUANTITY = lazy_pattern(r"([0-9]{1,9}(?:\.[0-9]{1,6})?)\s*([A-Za-z%/()]*)")
_CUDA = lazy_pattern(r"(\d{1,3})\.(\d{1,3})\b")


def value(text: str | None) -> str | None:
    """A field's text, or ``None`` where the driver reports nothing: empty, ``N/A``,
    ``[N/A]``, ``[Not Supported]``, ``Unknown Error``, ``Requested functionality has been
    deprecated``... (:data:`NOT_REPORTED`)."""
    if text is None:
        return None
    s = " ".join(text.split())
    if s.startswith("[") and s.endswith("]"):
        s = s[1:-1].strip()
    if not s or s.lower() in NOT_REPORTED:
        return None
    return s


def quantity(text: str | None, unit: str) -> float | None:
    """The number of a field in ``unit`` (``"350.00 W"`` -> 350.0 for ``W``; a bare
    number is taken as is); ``None`` when not reported or in another unit."""
    s = value(text)
    if s is None:
        return None
    m = _QUANTITY().fullmatch(s)
    if not m or (m.group(2) and m.group(2).lower() != unit.lower()):
        return None
    return float(m.group(1))


def cuda_of(text: str | None) -> tuple[int, int] | None:
    """The CUDA version the driver supports, from ``cuda_version`` (``"12.2"``; later
    drivers may add words after the number): ``(12, 2)``; ``None`` for ``Not Found`` or
    ``N/A`` (drivers before 410 have no such element)."""
    s = value(text)
    m = _CUDA().match(s) if s else None
    return (int(m.group(1)), int(m.group(2))) if m else None


@record
class GpuHealth:
    """What one ``<gpu>`` element says (``None``: not reported by this GPU or mode)."""

    bus_id: str
    name: str
    ecc_current: str | None = None
    ecc_pending: str | None = None
    pages_pending_blacklist: str | None = None
    pages_pending_retirement: str | None = None
    rows_pending: str | None = None
    rows_failure: str | None = None
    reasons: tuple[tuple[str, bool], ...] = ()
    """``(reason, active)`` with the ``clocks_event_reason_`` prefix removed; reasons the
    GPU reports as ``N/A`` are left out."""
    power_limit_w: float | None = None
    """The limit in force: ``current_power_limit`` (v12+), else ``enforced_power_limit``,
    else ``power_limit``."""
    default_power_limit_w: float | None = None
    requested_power_limit_w: float | None = None
    """The limit set (``nvidia-smi -pl``): ``requested_power_limit`` or ``power_limit``."""
    persistence: str | None = None
    mig: str | None = None
    """``mig_mode/current_mig``: ``Enabled``/``Disabled`` (``None`` before Ampere)."""
    driver_model: str | None = None
    """``WDDM`` or ``TCC`` on Windows; ``None`` on Linux."""
    virtualization: str | None = None
    """``None`` (the word), ``Pass-Through``, ``VGPU``, ``Host VGPU``..."""
    volatile_uncorrectable: int | None = None
    """Uncorrectable ECC errors since the last reset (DRAM and SRAM, or double-bit)."""
    mig_uncorrectable: int | None = None
    """Sum over MIG instances of their volatile SRAM uncorrectable counts."""
    repairs_pending: tuple[str, ...] = ()
    """v13 repair flags that are ``Yes``: ``channel_repair_pending``, ``tpc_repair_pending``,
    ``unrepairable_memory``."""
    app_clock_mhz: float | None = None
    default_app_clock_mhz: float | None = None
    app_mem_clock_mhz: float | None = None
    default_app_mem_clock_mhz: float | None = None
    aggregate_uncorrectable: int | None = None
    """Uncorrectable ECC errors over the GPU's life (InfoROM): ``aggregate`` as
    :attr:`volatile_uncorrectable`."""
    retired_pages: tuple[int | None, int | None] = (None, None)
    """Pages retired for multiple single-bit and for double-bit errors
    (``retired_pages/*/retired_count``; Kepler to Volta, ``N/A`` on later GPUs)."""
    rows_remapped: tuple[int | None, int | None] = (None, None)
    """Rows remapped for correctable and for uncorrectable errors (Ampere and later)."""
    banks_without_spare_rows: int | None = None
    """``row_remapper_histogram_none``: memory banks with no spare row left."""
    sram_threshold_exceeded: str | None = None
    """``ecc_errors/aggregate/sram_threshold_exceeded`` (driver 535+): ``Yes`` when NVIDIA's
    RMA thresholds for SRAM uncorrectable errors are met."""


@record
class SmiLog:
    """A whole ``nvidia-smi -q -x`` document."""

    driver_version: str | None
    cuda: tuple[int, int] | None
    """The CUDA version this driver supports (``cuda_version``), as its driver reports."""
    cuda_text: str | None
    schema: str | None
    """DTD named in the DOCTYPE: ``nvsmi_device_v12.dtd``."""
    gpus: tuple[GpuHealth, ...]


def _text(el: ET.Element | None, path: str) -> str | None:
    if el is None:
        return None
    node = el.find(path)
    if node is None:
        return None
    return value(node.text)


def _int(text: str | None) -> int | None:
    """A count: ASCII digits only (``"²".isdigit()`` is true but ``int`` refuses it; an
    endless run of digits would hit Python's int-from-string limit)."""
    s = value(text)
    ok = s is not None and len(s) <= 18 and s.isascii() and s.isdigit()
    return int(s) if ok and s is not None else None


def _whole(number: float | None) -> int | None:
    return int(number) if number is not None and number.is_integer() else None


def _sum(values: Iterable[int | None]) -> int | None:
    got = [v for v in values if v is not None]
    return sum(got) if got else None


def _volatile_uncorrectable(gpu: ET.Element, which: str = "volatile") -> int | None:
    """Uncorrectable ECC errors of ``ecc_errors/<which>`` (``volatile`` or ``aggregate``)."""
    vol = gpu.find(f"ecc_errors/{which}")
    if vol is None:
        return None
    if vol.find("double_bit") is not None:  # Kepler to Volta drivers
        return _int(_text(vol, "double_bit/total"))
    sram = _int(_text(vol, "sram_uncorrectable"))
    if sram is None:
        sram = _sum(_int(_text(vol, t)) for t in ("sram_uncorrectable_parity",
                                                    "sram_uncorrectable_secded"))
    return _sum((sram, _int(_text(vol, "dram_uncorrectable"))))


def _mig_uncorrectable(gpu: ET.Element) -> int | None:
    return _sum(_int(_text(dev, "ecc_error_count/volatile_count/sram_uncorrectable"))
                for dev in gpu.findall("mig_devices/mig_device"))


def _reasons(gpu: ET.Element) -> tuple[tuple[str, bool], ...]:
    out: list[tuple[str, bool]] = []
    for block in ("clocks_event_reasons", "clocks_throttle_reasons"):
        for child in gpu.findall(block + "/*"):
            name = child.tag
            for pre in _REASON_PREFIXES:
                if name.startswith(pre):
                    name = name[len(pre):]
            v = value(child.text)
            if v in ("Active", "Not Active"):
                out.append((name, v == "Active"))
    return tuple(out)


def _power(gpu: ET.Element) -> tuple[float | None, float | None, float | None]:
    """(limit in force, default limit, requested limit) in watts."""
    new, old = gpu.find("gpu_power_readings"), gpu.find("power_readings")

    def watts(*where: tuple[ET.Element | None, str]) -> float | None:
        for el, tag in where:
            w = quantity(_text(el, tag), "W")
            if w is not None:
                return w
        return None

    current = watts((new, "current_power_limit"), (old, "current_power_limit"),
                    (old, "enforced_power_limit"), (old, "power_limit"))
    default = watts((new, "default_power_limit"), (old, "default_power_limit"))
    requested = watts((new, "requested_power_limit"), (old, "power_limit"))
    return current, default, requested


def _gpu(gpu: ET.Element) -> GpuHealth:
    limit, default, requested = _power(gpu)
    rows = gpu.find("remapped_rows")
    repairs = tuple(t for t in ("channel_repair_pending", "tpc_repair_pending",
                                "unrepairable_memory")
                    if _text(gpu, f"ecc_errors/{t}") == "Yes")
    return GpuHealth(
        bus_id=gpu.get("id", "?"),
        name=_text(gpu, "product_name") or "?",
        ecc_current=_text(gpu, "ecc_mode/current_ecc"),
        ecc_pending=_text(gpu, "ecc_mode/pending_ecc"),
        pages_pending_blacklist=_text(gpu, "retired_pages/pending_blacklist"),
        pages_pending_retirement=_text(gpu, "retired_pages/pending_retirement"),
        rows_pending=_text(rows, "remapped_row_pending"),
        rows_failure=_text(rows, "remapped_row_failure"),
        reasons=_reasons(gpu),
        power_limit_w=limit, default_power_limit_w=default, requested_power_limit_w=requested,
        persistence=_text(gpu, "persistence_mode"),
        mig=_text(gpu, "mig_mode/current_mig"),
        driver_model=_text(gpu, "driver_model/current_dm"),
        virtualization=_text(gpu, "gpu_virtualization_mode/virtualization_mode"),
        volatile_uncorrectable=_volatile_uncorrectable(gpu),
        mig_uncorrectable=_mig_uncorrectable(gpu),
        repairs_pending=repairs,
        app_clock_mhz=quantity(_text(gpu, "applications_clocks/graphics_clock"), "MHz"),
        default_app_clock_mhz=quantity(
            _text(gpu, "default_applications_clocks/graphics_clock"), "MHz"),
        app_mem_clock_mhz=quantity(_text(gpu, "applications_clocks/mem_clock"), "MHz"),
        default_app_mem_clock_mhz=quantity(
            _text(gpu, "default_applications_clocks/mem_clock"), "MHz"),
        **_memory_counts(gpu),
    )


def _memory_counts(gpu: ET.Element) -> dict[str, Any]:
    """Lifetime ECC, retired-page and row-remap counts (the memory-health thresholds)."""
    rp, rr = "retired_pages/", "remapped_rows/"
    return {
        "aggregate_uncorrectable": _volatile_uncorrectable(gpu, "aggregate"),
        "retired_pages": (_int(_text(gpu, rp + "multiple_single_bit_retirement/retired_count")),
                          _int(_text(gpu, rp + "double_bit_retirement/retired_count"))),
        "rows_remapped": (_int(_text(gpu, rr + "remapped_row_corr")),
                          _int(_text(gpu, rr + "remapped_row_unc"))),
        "banks_without_spare_rows": _whole(quantity(_text(
            gpu, rr + "row_remapper_histogram/row_remapper_histogram_none"), "bank(s)")),
        "sram_threshold_exceeded": _text(gpu, "ecc_errors/aggregate/sram_threshold_exceeded"),
    }


def parse_root(text: str) -> ET.Element:
    """The ``<nvidia_smi_log>`` element of ``text``: size-capped, entities refused, the
    root element checked (:class:`ParseError` otherwise)."""
    if len(text) > MAX_XML:
        raise ParseError(f"nvidia-smi XML larger than {MAX_XML} bytes")
    if "<!ENTITY" in text:
        raise ParseError("nvidia-smi XML declares entities; refused")
    import xml.etree.ElementTree as ET  # only live scans of a GPU host get here

    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        line, col = getattr(exc, "position", (None, None))
        raise ParseError(f"not well-formed XML at column {col}: {exc}", line=line) from None
    if root.tag != "nvidia_smi_log":
        raise ParseError(f"root element is <{root.tag}>, not <nvidia_smi_log>")
    return root


def log_of(root: ET.Element, text: str) -> SmiLog:
    """The :class:`SmiLog` of a parsed document (``text``: its source, for the DTD)."""
    dtd = re.search(r"<!DOCTYPE\s+nvidia_smi_log\s+SYSTEM\s+\"([^\"]{1,64})\"", text[:512])
    cuda_text = _text(root, "cuda_version")
    return SmiLog(_text(root, "driver_version"), cuda_of(cuda_text), cuda_text,
                  dtd.group(1) if dtd else None,
                  tuple(_gpu(g) for g in root.findall("gpu")))


def parse_log(text: str) -> SmiLog:
    """An ``nvidia-smi -q -x`` document."""
    return log_of(parse_root(text), text)


def parse(text: str) -> list[GpuHealth]:
    """The GPUs of an ``nvidia-smi -q -x`` document, in document order."""
    return list(parse_log(text).gpus)


def query(host: Host, timeout: float) -> SmiLog | str:
    """``nvidia-smi -q -x`` of the real live system, parsed; run once per scan whichever
    rule asks first (every ``gpu.*`` rule shares it); a string says why there is none.
    Only on the real ``/`` live (:meth:`Host.run`: the real system's binary, a timeout)."""

    def load() -> SmiLog | str:
        root = tree(host, timeout)
        return root if isinstance(root, str) else log_of(root, output(host, timeout)[1])

    return host.memo(("nvidia-smi-q-x",), load)


def tree(host: Host, timeout: float) -> ET.Element | str:
    """The parsed document of this scan's ``nvidia-smi -q -x`` (run and parsed at most
    once per scan, only on the real ``/`` live), or why there is none: what :func:`query`
    and the fabric, process and MIG readers (:mod:`aiaudit.linux.gpu.smidoc`) share."""

    def load() -> ET.Element | str:
        ok, text = output(host, timeout)
        if not ok:
            return text
        try:
            return parse_root(text)
        except ParseError as exc:
            return f"unexpected nvidia-smi output: {exc}"

    return host.memo(("nvidia-smi-q-x-tree",), load)


def output(host: Host, timeout: float) -> tuple[bool, str]:
    """``(True, the XML nvidia-smi -q -x printed)`` or ``(False, why there is none)``: the
    one run per scan that :func:`query` and the readers of other sections (fabric,
    processes, MIG: :mod:`aiaudit.linux.gpu.smidoc`) share."""

    def load() -> tuple[bool, str]:
        try:
            res = host.run(list(SMI_ARGV), timeout=timeout)
        except (CommandError, LiveStateUnavailable) as exc:
            return False, f"nvidia-smi -q -x failed: {exc}"
        if res.returncode != 0:
            first = (res.stdout.strip() or res.stderr.strip()).splitlines()[:1]
            return False, (f"nvidia-smi exited {res.returncode}: "
                           f"{first[0][:200] if first else 'no output'}")
        return True, res.stdout

    return host.memo(("nvidia-smi-q-x-output",), load)
