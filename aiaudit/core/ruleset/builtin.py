# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Built-in plugin that ships the rulesets in ``aiaudit.rulesets`` (package data).

Each ``NAME.yaml`` may have a JSON twin ``NAME.json`` (``{"source_crc32": ..., "data":
...}``) written by ``python -m aiaudit.core.ruleset.builtin``: loading JSON avoids importing and
running the YAML parser on every scan.  The twin is used only when its hash matches the YAML
text, so a stale twin can never change what a scan does.
"""

from __future__ import annotations

import json
import zlib
from typing import Any, Callable

from aiaudit.api import RulesetSource, hookimpl
from aiaudit.core import resources

PACKAGE = "aiaudit.rulesets"


def _loader(name: str) -> Callable[[], str]:
    def load() -> str:
        return resources.read_text(PACKAGE, name)

    return load


def _data_loader(name: str) -> Callable[[], Any]:
    def load_data() -> Any:
        twin = name[: -len(".yaml")] + ".json"
        if not resources.exists(PACKAGE, twin):
            return None
        text = resources.read_bytes(PACKAGE, name)
        doc = json.loads(resources.read_text(PACKAGE, twin))
        if doc.get("source_crc32") != fingerprint(text):
            return None
        return doc["data"]

    return load_data


def fingerprint(data: bytes) -> str:
    """Staleness check of a twin: CRC-32 and length of the YAML bytes.  Not a security
    measure (both files are package data); cheap, and zlib is already loaded."""
    return f"{zlib.crc32(data):08x}-{len(data)}"


def compile_twins(directory: str) -> list[str]:
    """Write the JSON twin of every ``*.yaml`` ruleset in ``directory``; returns paths."""
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
            json.dump({"generated_by": "python -m aiaudit.core.ruleset.builtin",
                       "source_crc32": fingerprint(raw), "data": data},
                      fh, indent=1, sort_keys=False)
            fh.write("\n")
        out.append(twin)
    return out


@hookimpl
def aiaudit_register_rulesets() -> list[RulesetSource]:
    """Every ``*.yaml`` file in the ``aiaudit.rulesets`` package."""
    out = []
    for fn in resources.names(PACKAGE):
        if fn.endswith(".yaml"):
            out.append(RulesetSource(fn[: -len(".yaml")], _loader(fn), f"{PACKAGE}/{fn}",
                                     _data_loader(fn)))
    return out


if __name__ == "__main__":  # python -m aiaudit.core.ruleset.builtin [DIR]
    import sys

    for written in compile_twins(sys.argv[1] if len(sys.argv) > 1 else "rulesets"):
        print(written)
