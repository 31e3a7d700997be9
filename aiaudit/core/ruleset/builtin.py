# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Built-in plugin that ships the rulesets in ``aiaudit.rulesets`` (package data).

Each ``NAME.yaml`` may have a JSON twin ``NAME.json`` written by ``python -m
aiaudit.core.startup.twins rulesets`` (:mod:`aiaudit.core.startup.twins`): loading JSON avoids
importing and running the YAML parser on every scan; a stale twin is never used.
"""

from __future__ import annotations

from typing import Any, Callable

from aiaudit.api import RulesetSource, hookimpl
from aiaudit.core import resources
from aiaudit.core.startup import twins

PACKAGE = "aiaudit.rulesets"


def _loader(name: str) -> Callable[[], str]:
    def load() -> str:
        return resources.read_text(PACKAGE, name)

    return load


def _data_loader(name: str) -> Callable[[], Any]:
    def load_data() -> Any:
        return twins.load(lambda n: resources.read_bytes(PACKAGE, n),
                          lambda n: resources.read_text(PACKAGE, n),
                          lambda n: resources.exists(PACKAGE, n), name)

    return load_data


@hookimpl
def aiaudit_register_rulesets() -> list[RulesetSource]:
    """Every ``*.yaml`` file in the ``aiaudit.rulesets`` package."""
    out = []
    for fn in resources.names(PACKAGE):
        if fn.endswith(".yaml"):
            out.append(RulesetSource(fn[: -len(".yaml")], _loader(fn), f"{PACKAGE}/{fn}",
                                     _data_loader(fn)))
    return out
