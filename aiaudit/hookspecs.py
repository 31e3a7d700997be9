"""pluggy hook specifications: the contract between aiaudit and its plugins.

Built-in checks and reporters register through exactly these hooks, the same path as
third-party plugins found through the ``aiaudit`` entry-point group.  Each hook returns
*specs* (plain data with a function in it); the runner calls each check itself, one rule at a
time, so a check that raises cannot abort the others (pluggy would abort a whole hook call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from aiaudit.api import CheckSpec, ReporterSpec, RulesetSource

PROJECT = "aiaudit"
hookspec = pluggy.HookspecMarker(PROJECT)


@hookspec
def aiaudit_register_checks() -> list[CheckSpec]:
    """Return the check specs this plugin provides.

    A check id is lowercase and dotted (``kernel.sysctl``) and unique across all plugins.
    """
    raise NotImplementedError


@hookspec
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Return the output formats (reporters) this plugin provides."""
    raise NotImplementedError


@hookspec
def aiaudit_register_rulesets() -> list[RulesetSource]:
    """Return rulesets this plugin ships, so ``--ruleset NAME`` can find them."""
    raise NotImplementedError
