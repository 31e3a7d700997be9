"""``nvidia-smi -q -x`` XML: per-GPU ECC mode, retired pages, row remapping, clock event
reasons and power limits.

The document is ``<nvidia_smi_log>`` with one ``<gpu id="00000000:1B:00.0">`` per GPU, as
described by the DTD nvidia-smi names in its DOCTYPE (``nvsmi_device_v12.dtd`` in driver
535-570).  Elements used here:

- ``ecc_mode/current_ecc`` and ``pending_ecc``: ``Enabled``, ``Disabled`` or ``N/A``.
- ``retired_pages/pending_blacklist`` and ``pending_retirement``: ``Yes``/``No``/``N/A``
  (dynamic page retirement, Kepler to Volta; ``N/A`` on GPUs with row remapping).
- ``remapped_rows/remapped_row_pending`` and ``remapped_row_failure``: ``Yes``/``No``
  (Ampere and newer; "NVIDIA GPU Memory Error Management", row remapping).
- ``clocks_event_reasons/clocks_event_reason_*`` (driver >= 535 renamed them from
  ``clocks_throttle_reasons/clocks_throttle_reason_*``; both are read): ``Active`` or
  ``Not Active``.
- ``gpu_power_readings`` (``power_readings`` before driver 530): ``current_power_limit``
  and ``default_power_limit`` in ``W``.

External entities are never resolved (ElementTree does not fetch DTDs); a document that
declares entities is refused outright, so no expansion can blow up memory.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

MAX_XML = 16 * 1024 * 1024
"""Largest document parsed (8 GPUs with supported-clock tables are ~400 KiB)."""

_REASON_PREFIXES = ("clocks_event_reason_", "clocks_throttle_reason_")


@record
class GpuHealth:
    """What one ``<gpu>`` element says."""

    bus_id: str
    name: str
    ecc_current: str | None
    ecc_pending: str | None
    pages_pending_blacklist: str | None
    pages_pending_retirement: str | None
    rows_pending: str | None
    rows_failure: str | None
    reasons: tuple[tuple[str, bool], ...]
    """``(reason, active)`` with the ``clocks_event_reason_`` prefix removed."""
    power_limit_w: float | None
    default_power_limit_w: float | None


def _text(el: ET.Element | None, path: str) -> str | None:
    if el is None:
        return None
    node = el.find(path)
    if node is None or node.text is None:
        return None
    return node.text.strip()


def _watts(value: str | None) -> float | None:
    if not value:
        return None
    m = re.fullmatch(r"(\d{1,6}(?:\.\d{1,4})?)\s*W", value)
    return float(m.group(1)) if m else None


def parse(text: str) -> list[GpuHealth]:
    """The GPUs of an ``nvidia-smi -q -x`` document, in document order."""
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
    out: list[GpuHealth] = []
    for gpu in root.findall("gpu"):
        reasons: list[tuple[str, bool]] = []
        for block in ("clocks_event_reasons", "clocks_throttle_reasons"):
            el = gpu.find(block)
            if el is None:
                continue
            for child in el:
                name = child.tag
                for pre in _REASON_PREFIXES:
                    if name.startswith(pre):
                        name = name[len(pre):]
                value = (child.text or "").strip()
                if value in ("Active", "Not Active"):
                    reasons.append((name, value == "Active"))
        power = gpu.find("gpu_power_readings")
        if power is None:
            power = gpu.find("power_readings")
        out.append(GpuHealth(
            bus_id=gpu.get("id", "?"),
            name=_text(gpu, "product_name") or "?",
            ecc_current=_text(gpu, "ecc_mode/current_ecc"),
            ecc_pending=_text(gpu, "ecc_mode/pending_ecc"),
            pages_pending_blacklist=_text(gpu, "retired_pages/pending_blacklist"),
            pages_pending_retirement=_text(gpu, "retired_pages/pending_retirement"),
            rows_pending=_text(gpu, "remapped_rows/remapped_row_pending"),
            rows_failure=_text(gpu, "remapped_rows/remapped_row_failure"),
            reasons=tuple(reasons),
            power_limit_w=_watts(_text(power, "current_power_limit")),
            default_power_limit_w=_watts(_text(power, "default_power_limit")),
        ))
    return out
