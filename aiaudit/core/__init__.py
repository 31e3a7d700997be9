# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""The engine: the data model and errors, the :class:`~aiaudit.core.host.Host` (the only
I/O), rulesets, plugin discovery, the runner and the one in-process scan entry point."""
