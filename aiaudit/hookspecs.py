# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
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

    A check id is lowercase and dotted (``kernel.sysctl``) and unique across all plugins:
    registering one that exists (a built-in one included) stops the scan with a usage error
    naming both plugins.  A third-party plugin's checks run in a worker process that the
    runner kills at the rule timeout or scan deadline; whatever they raise (``SystemExit``
    included) or return that is not well-formed results (:mod:`aiaudit.core.wellformed`: a
    ``status`` that is a plain string, a snippet that is not a :class:`~aiaudit.api.Snippet`
    ...) is an ``error`` result for their rule only, and what they print goes to stderr.
    """
    raise NotImplementedError


@hookspec
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Return the output formats (reporters) this plugin provides (names unique across
    all plugins, built-ins included, as for checks)."""
    raise NotImplementedError


@hookspec
def aiaudit_register_rulesets() -> list[RulesetSource]:
    """Return rulesets this plugin ships, so ``--ruleset NAME`` can find them."""
    raise NotImplementedError
