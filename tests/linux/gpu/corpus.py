"""The corpus of real NVIDIA captures in ``tests/fixtures/gpu`` (see its ``PROVENANCE.md``):
where each file came from, the facts it shows and the verdict every GPU rule must give.

``nvidia-smi -q`` text captures (published where the XML is not) are turned into the XML
elements aiaudit reads by :func:`q_text_to_xml`: a fixed table from the text labels to the
element names of the same fields in the XML captures of the same driver branches (e.g. the
535 A100 capture), value for value; nothing is invented, unmapped fields are left out.  The
result is labelled "derived" wherever it is used.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "gpu"
CORPUS = ROOT / "corpus.json"

RULES = ("GPU-DRIVER-LIBRARY-MATCH", "GPU-DRIVER-CUDA-MINOR-COMPAT", "GPU-DRIVER-CUDA-RELEASE",
         "GPU-CUDA-FORWARD-COMPAT", "GPU-PERSISTENCE-MODE", "GPU-COUNT",
         "GPU-NOUVEAU-DISABLED", "GPU-NVIDIA-UVM-AVAILABLE", "GPU-FABRICMANAGER",
         "GPU-PEERMEM-LOADED", "GPU-ECC-ENABLED", "GPU-MEMORY-ERRORS-NONE-PENDING",
         "GPU-MEMORY-HEALTH", "GPU-CLOCKS-NOT-THROTTLED")
"""Every GPU rule of the shipped dl-training ruleset."""

PER_GPU = {"ecc": "GPU-ECC-ENABLED", "memory_errors": "GPU-MEMORY-ERRORS-NONE-PENDING",
           "throttle": "GPU-CLOCKS-NOT-THROTTLED", "persistence": "GPU-PERSISTENCE-MODE",
           "memory_health": "GPU-MEMORY-HEALTH"}
"""Rules judged per GPU from nvidia-smi, keyed as in ``corpus.json``'s ``expect``."""


@lru_cache(maxsize=1)
def corpus() -> dict[str, Any]:
    """``corpus.json``."""
    return json.loads(CORPUS.read_text())  # type: ignore[no-any-return]


def captures(kind: str | None = None) -> list[dict[str, Any]]:
    """The captures (``kind``: ``xml`` or ``text``)."""
    return [c for c in corpus()["captures"] if kind is None or c["kind"] == kind]


def smi_xml(capture: dict[str, Any]) -> str:
    """What ``nvidia-smi -q -x`` printed (real), or derived from the ``-q`` text."""
    text = (ROOT / capture["file"]).read_text()
    return text if capture["kind"] == "xml" else q_text_to_xml(text)


# ------------------------------------------------------------ nvidia-smi -q text -> XML
_GPU_FIELDS: dict[tuple[str, ...], str] = {
    ("Product Name",): "product_name",
    ("Persistence Mode",): "persistence_mode",
    ("MIG Mode", "Current"): "mig_mode/current_mig",
    ("MIG Mode", "Pending"): "mig_mode/pending_mig",
    ("Driver Model", "Current"): "driver_model/current_dm",
    ("GPU Virtualization Mode", "Virtualization Mode"):
        "gpu_virtualization_mode/virtualization_mode",
    ("ECC Mode", "Current"): "ecc_mode/current_ecc",
    ("ECC Mode", "Pending"): "ecc_mode/pending_ecc",
    ("ECC Errors", "Volatile", "SRAM Uncorrectable"): "ecc_errors/volatile/sram_uncorrectable",
    ("ECC Errors", "Volatile", "SRAM Uncorrectable Parity"):
        "ecc_errors/volatile/sram_uncorrectable_parity",
    ("ECC Errors", "Volatile", "SRAM Uncorrectable SEC-DED"):
        "ecc_errors/volatile/sram_uncorrectable_secded",
    ("ECC Errors", "Volatile", "DRAM Uncorrectable"): "ecc_errors/volatile/dram_uncorrectable",
    ("ECC Errors", "Aggregate", "SRAM Uncorrectable"): "ecc_errors/aggregate/sram_uncorrectable",
    ("ECC Errors", "Aggregate", "SRAM Uncorrectable Parity"):
        "ecc_errors/aggregate/sram_uncorrectable_parity",
    ("ECC Errors", "Aggregate", "SRAM Uncorrectable SEC-DED"):
        "ecc_errors/aggregate/sram_uncorrectable_secded",
    ("ECC Errors", "Aggregate", "DRAM Uncorrectable"): "ecc_errors/aggregate/dram_uncorrectable",
    ("ECC Errors", "Aggregate", "SRAM Threshold Exceeded"):
        "ecc_errors/aggregate/sram_threshold_exceeded",
    ("Retired Pages", "Single Bit ECC"):
        "retired_pages/multiple_single_bit_retirement/retired_count",
    ("Retired Pages", "Double Bit ECC"): "retired_pages/double_bit_retirement/retired_count",
    ("Remapped Rows", "Correctable Error"): "remapped_rows/remapped_row_corr",
    ("Remapped Rows", "Uncorrectable Error"): "remapped_rows/remapped_row_unc",
    ("Remapped Rows", "Bank Remap Availability Histogram", "None"):
        "remapped_rows/row_remapper_histogram/row_remapper_histogram_none",
    ("Retired Pages", "Pending Page Blacklist"): "retired_pages/pending_blacklist",
    ("Retired Pages", "Pending Page Retirement"): "retired_pages/pending_retirement",
    ("Remapped Rows",): "remapped_rows",
    ("Remapped Rows", "Pending"): "remapped_rows/remapped_row_pending",
    ("Remapped Rows", "Remapping Failure Occurred"): "remapped_rows/remapped_row_failure",
    ("GPU Power Readings", "Current Power Limit"): "gpu_power_readings/current_power_limit",
    ("GPU Power Readings", "Requested Power Limit"):
        "gpu_power_readings/requested_power_limit",
    ("GPU Power Readings", "Default Power Limit"): "gpu_power_readings/default_power_limit",
    ("Power Readings", "Power Limit"): "power_readings/power_limit",
    ("Power Readings", "Default Power Limit"): "power_readings/default_power_limit",
    ("Power Readings", "Enforced Power Limit"): "power_readings/enforced_power_limit",
    ("Applications Clocks", "Graphics"): "applications_clocks/graphics_clock",
    ("Applications Clocks", "Memory"): "applications_clocks/mem_clock",
    ("Default Applications Clocks", "Graphics"): "default_applications_clocks/graphics_clock",
    ("Default Applications Clocks", "Memory"): "default_applications_clocks/mem_clock",
}
_REASONS = {"Idle": "gpu_idle", "Applications Clocks Setting": "applications_clocks_setting",
            "SW Power Cap": "sw_power_cap", "HW Slowdown": "hw_slowdown",
            "HW Thermal Slowdown": "hw_thermal_slowdown",
            "HW Power Brake Slowdown": "hw_power_brake_slowdown", "Sync Boost": "sync_boost",
            "SW Thermal Slowdown": "sw_thermal_slowdown",
            "Display Clock Setting": "display_clocks_setting"}
_LINE = re.compile(r"^( *)(\S.*?)(?:\s+: (.*))?$")


def _q_items(text: str) -> tuple[dict[str, str], list[tuple[str, list[tuple[tuple[str, ...],
                                                                                 str]]]]]:
    """(top-level fields, [(GPU bus id, [(label path, value)])]) of ``nvidia-smi -q``."""
    top: dict[str, str] = {}
    gpus: list[tuple[str, list[tuple[tuple[str, ...], str]]]] = []
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        m = _LINE.match(line.rstrip())
        if not m or line.startswith("=") or not line.strip():
            continue
        indent, label, val = len(m.group(1)), m.group(2).strip(), m.group(3)
        if indent == 0 and label.startswith("GPU ") and val is None:
            gpus.append((label[4:], []))
            stack = []
            continue
        if indent == 0:
            if val is not None:
                top[label] = val.strip()
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = (*(s for _, s in stack), label)
        if val is None:
            stack.append((indent, label))
        elif gpus:
            gpus[-1][1].append((path, val.strip()))
    return top, gpus


def _element(path: str, value: str) -> str:
    tags = path.split("/")
    return ("".join(f"<{t}>" for t in tags) + escape(value)
            + "".join(f"</{t}>" for t in reversed(tags)))


def q_text_to_xml(text: str) -> str:
    """The fields aiaudit reads of an ``nvidia-smi -q`` capture as ``nvidia-smi -q -x``
    elements (one element per field: ElementTree's ``find`` takes the first of repeated
    parents, so each field is written whole)."""
    top, gpus = _q_items(text)
    out = ['<?xml version="1.0" ?>', "<nvidia_smi_log>",
           _element("driver_version", top.get("Driver Version", "")),
           _element("cuda_version", top.get("CUDA Version", ""))]
    for bus, items in gpus:
        leaves: dict[str, str] = {}
        blocks: dict[str, list[str]] = {}
        for path, value in items:
            block = ("clocks_event_reasons" if path[0] == "Clocks Event Reasons" else
                     "clocks_throttle_reasons" if path[0] == "Clocks Throttle Reasons" else None)
            if block and path[-1] in _REASONS:
                tag = f"{block[:-1]}_{_REASONS[path[-1]]}"
                blocks.setdefault(block, []).append(_element(tag, value))
            elif path in _GPU_FIELDS:
                parent, _, leaf = _GPU_FIELDS[path].rpartition("/")
                if parent:
                    blocks.setdefault(parent, []).append(_element(leaf, value))
                else:
                    leaves.setdefault(leaf, value)
        out.append(f'<gpu id="{escape(bus)}">')
        out += [_element(tag, value) for tag, value in leaves.items()]
        for parent, parts in blocks.items():
            tags = parent.split("/")
            out.append("".join(f"<{t}>" for t in tags) + "".join(parts)
                       + "".join(f"</{t}>" for t in reversed(tags)))
        out.append("</gpu>")
    out.append("</nvidia_smi_log>")
    return "\n".join(out)
