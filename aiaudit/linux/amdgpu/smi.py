"""``amd-smi`` JSON, live only, for what sysfs does not show: the driver's retired-page
threshold and whether a GPU exceeded it (``amd-smi static --ras``; the threshold is
debugfs-only in sysfs terms).

The document (amdsmi_cli ``amdsmi_commands.py`` ``static``): a list with one object per GPU,
or (ROCm 6.4 and later) ``{"gpu_data": [...]}``; each has ``gpu`` (index), ``bus.bdf`` with
``--bus``, and with ``--ras`` a ``ras`` object: ``eeprom_version``, ``bad_page_threshold``
(an integer or ``"N/A"``), ``bad_page_threshold_exceeded`` (``"True"``, ``"False"`` or
``"N/A"``: amd-smi counts the reserved pages and compares them with the threshold),
``parity_schema``, ``single_bit_schema``, ``double_bit_schema``, ``poison_schema``
(``ENABLED``/``DISABLED``) and ``ecc_block_state``.  amd-smi may print warnings before the
JSON; the document starts at the first ``[`` or ``{``.
"""

from __future__ import annotations

import json
from typing import Any

from aiaudit.core.errors import CommandError, HostError, LiveStateUnavailable, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record

ARGV = ("amd-smi", "static", "--ras", "--bus", "--json")
MAX_JSON = 8 * 1024 * 1024
"""Largest document parsed (eight MI300X with every static section are ~200 KiB)."""


@record
class SmiRas:
    """What amd-smi says of one GPU's RAS."""

    gpu: int
    bdf: str | None
    threshold: int | None
    exceeded: bool | None


def _gpus(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, dict) and isinstance(doc.get("gpu_data"), list):
        doc = doc["gpu_data"]
    if not isinstance(doc, list) or not all(isinstance(g, dict) for g in doc):
        raise ParseError("not a list of GPU objects (nor {\"gpu_data\": [...]})")
    return doc


def parse_static(text: str) -> list[SmiRas]:
    """The per-GPU RAS facts of ``amd-smi static --ras --bus --json``."""
    if len(text) > MAX_JSON:
        raise ParseError(f"amd-smi output over {MAX_JSON} bytes")
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    if not starts:
        raise ParseError("no JSON in amd-smi output")
    try:
        doc = json.loads(text[min(starts):])
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"amd-smi output is not JSON: {exc}") from None
    out: list[SmiRas] = []
    for g in _gpus(doc):
        idx = g.get("gpu")
        if not isinstance(idx, int):
            raise ParseError(f"a GPU object without an integer 'gpu': {str(g)[:80]}")
        bus: dict[str, Any] = g["bus"] if isinstance(g.get("bus"), dict) else {}
        ras: dict[str, Any] = g["ras"] if isinstance(g.get("ras"), dict) else {}
        bdf = bus.get("bdf") if isinstance(bus.get("bdf"), str) else None
        thr = ras.get("bad_page_threshold")
        exc_ = str(ras.get("bad_page_threshold_exceeded", "N/A"))
        out.append(SmiRas(idx, bdf.lower() if bdf else None,
                          thr if isinstance(thr, int) and not isinstance(thr, bool) else None,
                          {"True": True, "False": False}.get(exc_)))
    return out


def query(host: Host, timeout: float) -> list[SmiRas] | str:
    """``amd-smi static --ras --bus --json`` parsed (once per run), or why not (a string):
    not installed, not the real ``/``, failed, timed out, unparsable."""

    def load() -> list[SmiRas] | str:
        try:
            res = host.run(list(ARGV), timeout=timeout)
        except LiveStateUnavailable:
            return "amd-smi runs only when scanning the real / live"
        except (CommandError, HostError) as exc:
            return str(exc)
        if res.returncode != 0:
            return f"amd-smi exited {res.returncode}: {res.stderr.strip()[:200]}"
        try:
            return parse_static(res.stdout)
        except ParseError as exc:
            return f"unexpected amd-smi output: {exc}"

    return host.memo(("amd-smi-static-ras", timeout), load)
