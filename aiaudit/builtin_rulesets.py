"""Built-in plugin that ships the rulesets in ``aiaudit.rulesets`` (package data)."""

from __future__ import annotations

from importlib import resources

from aiaudit.api import RulesetSource, hookimpl

PACKAGE = "aiaudit.rulesets"


def _loader(name: str):
    def load() -> str:
        return resources.files(PACKAGE).joinpath(name).read_text(encoding="utf-8")

    return load


@hookimpl
def aiaudit_register_rulesets() -> list[RulesetSource]:
    """Every ``*.yaml`` file in the ``aiaudit.rulesets`` package."""
    out = []
    for entry in sorted(resources.files(PACKAGE).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            name = entry.name[: -len(".yaml")]
            out.append(RulesetSource(name, _loader(entry.name), f"{PACKAGE}/{entry.name}"))
    return out
