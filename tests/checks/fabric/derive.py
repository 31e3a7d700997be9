"""``nvidia-smi -q -x`` elements derived from real ``nvidia-smi -q`` text captures (GPUd's,
in ``tests/fixtures/gpu/text``): the fields the fabric and hand-over rules read, value for
value, under the element names of the real XML captures (``fabric/state``,
``fabric/status``, ``fb_memory_usage/used``...).  Derived, not captured: labelled so."""

from __future__ import annotations

import re
from pathlib import Path
from xml.sax.saxutils import escape

TEXT = Path(__file__).resolve().parents[2] / "fixtures" / "gpu" / "text"
_FIELDS = {("Product Name",): "product_name", ("Fabric", "State"): "fabric/state",
           ("Fabric", "Status"): "fabric/status", ("FB Memory Usage", "Used"):
           "fb_memory_usage/used", ("FB Memory Usage", "Total"): "fb_memory_usage/total",
           ("MIG Mode", "Current"): "mig_mode/current_mig",
           ("MIG Mode", "Pending"): "mig_mode/pending_mig", ("Minor Number",): "minor_number"}


def _gpu(bus: str, fields: list[tuple[str, str]]) -> list[str]:
    """One ``<gpu>``, the fields grouped under their parent element."""
    groups: dict[str, list[str]] = {}
    for path, value in fields:
        parent, _, leaf = path.rpartition("/")
        groups.setdefault(parent, []).append(f"<{leaf}>{escape(value)}</{leaf}>")
    body = [("".join(v) if not k else f"<{k}>{''.join(v)}</{k}>") for k, v in groups.items()]
    return [f'<gpu id="{bus}">', *body, "</gpu>"]


def derived_xml(name: str) -> str:
    """The derived document of text capture ``name``."""
    out = ["<nvidia_smi_log>"]
    gpus: list[tuple[str, list[tuple[str, str]]]] = []
    section = ""
    for line in (TEXT / name).read_text().splitlines():
        m = re.match(r"^GPU ([0-9A-Fa-f:.]+)$", line)
        if m:
            gpus.append((m.group(1), []))
            section = ""
            continue
        m = re.match(r"^( {4,8})(\S.*?)\s*(?::\s(.*))?$", line)
        if not m or not gpus:
            continue
        label, value = m.group(2).strip(), m.group(3)
        if len(m.group(1)) == 4:
            section = label if value is None else ""
            key: tuple[str, ...] = (label,)
        else:
            key = (section, label)
        if value is not None and key in _FIELDS:
            gpus[-1][1].append((_FIELDS[key], value.strip()))
    for bus, fields in gpus:
        out += _gpu(bus, fields)
    return "\n".join([*out, "</nvidia_smi_log>"])
