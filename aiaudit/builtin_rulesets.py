"""Built-in plugin that ships the rulesets in ``aiaudit.rulesets`` (package data).

Each ``NAME.yaml`` may have a JSON twin ``NAME.json`` (``{"source_sha256": ..., "data":
...}``) written by ``python -m aiaudit.builtin_rulesets``: loading JSON avoids importing and
running the YAML parser on every scan.  The twin is used only when its hash matches the YAML
text, so a stale twin can never change what a scan does.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from typing import Any, Callable

from aiaudit.api import RulesetSource, hookimpl

PACKAGE = "aiaudit.rulesets"


def _loader(name: str) -> Callable[[], str]:
    def load() -> str:
        return resources.files(PACKAGE).joinpath(name).read_text(encoding="utf-8")

    return load


def _data_loader(name: str) -> Callable[[], Any]:
    def load_data() -> Any:
        pkg = resources.files(PACKAGE)
        twin = pkg.joinpath(name[: -len(".yaml")] + ".json")
        if not twin.is_file():
            return None
        text = pkg.joinpath(name).read_bytes()
        doc = json.loads(twin.read_text(encoding="utf-8"))
        if doc.get("source_sha256") != hashlib.sha256(text).hexdigest():
            return None
        return doc["data"]

    return load_data


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
            json.dump({"generated_by": "python -m aiaudit.builtin_rulesets",
                       "source_sha256": hashlib.sha256(raw).hexdigest(), "data": data},
                      fh, indent=1, sort_keys=False)
            fh.write("\n")
        out.append(twin)
    return out


@hookimpl
def aiaudit_register_rulesets() -> list[RulesetSource]:
    """Every ``*.yaml`` file in the ``aiaudit.rulesets`` package."""
    out = []
    for entry in sorted(resources.files(PACKAGE).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            name = entry.name[: -len(".yaml")]
            out.append(RulesetSource(name, _loader(entry.name), f"{PACKAGE}/{entry.name}",
                                     _data_loader(entry.name)))
    return out


if __name__ == "__main__":  # python -m aiaudit.builtin_rulesets [DIR]
    import sys

    for written in compile_twins(sys.argv[1] if len(sys.argv) > 1 else "rulesets"):
        print(written)
