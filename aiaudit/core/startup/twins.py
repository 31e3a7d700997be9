# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""JSON twins of shipped YAML data: the parsed document without PyYAML at scan time.

A shipped ``NAME.yaml`` (the rulesets, the network service table) may have a twin
``NAME.json`` (``{"source_crc32": ..., "data": ...}``) written by ``python -m
aiaudit.core.startup.twins DIR``.  A scan reads the twin only when its fingerprint matches
the YAML bytes, so a stale twin never changes what a scan does (the YAML is parsed then).

Measured (``bench/bench.py --instructions``, 2026-12-01): reading the YAML instead costs a
prolog scan 99 M instructions more (320 -> 420 M) and a live dl-training scan 229 M (743
-> 972 M): PyYAML's import and its pure-Python parser.
"""

from __future__ import annotations

import json
import zlib
from typing import Any, Callable


def fingerprint(data: bytes) -> str:
    """Staleness check of a twin: CRC-32 and length of the YAML bytes.  Not a security
    measure (both files are package data); cheap, and zlib is already loaded."""
    return f"{zlib.crc32(data):08x}-{len(data)}"


def load(read_bytes: Callable[[str], bytes], read_text: Callable[[str], str],
         exists: Callable[[str], bool], name: str) -> Any:
    """The data of YAML file ``name`` from its up-to-date JSON twin, or ``None`` (no twin,
    or a stale one: the caller parses the YAML).  The callables read package data."""
    twin = name[: -len(".yaml")] + ".json"
    if not exists(twin):
        return None
    doc = json.loads(read_text(twin))
    if doc.get("source_crc32") != fingerprint(read_bytes(name)):
        return None
    return doc["data"]


def compile_twins(directory: str) -> list[str]:
    """Write the JSON twin of every ``*.yaml`` file in ``directory``; returns their paths."""
    import os

    import yaml

    out = []
    for fn in sorted(os.listdir(directory)):
        if not fn.endswith(".yaml"):
            continue
        path = os.path.join(directory, fn)
        with open(path, "rb") as fh:
            raw = fh.read()
        data = yaml.safe_load(raw.decode("utf-8"))
        twin = path[: -len(".yaml")] + ".json"
        with open(twin, "w", encoding="utf-8") as fh:
            json.dump({"generated_by": "python -m aiaudit.core.startup.twins",
                       "source_crc32": fingerprint(raw), "data": data},
                      fh, indent=1, sort_keys=False)
            fh.write("\n")
        out.append(twin)
    return out


if __name__ == "__main__":  # python -m aiaudit.core.startup.twins [DIR]
    import sys

    for written in compile_twins(sys.argv[1] if len(sys.argv) > 1 else "rulesets"):
        print(written)
