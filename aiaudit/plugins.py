"""Plugin discovery: built-in modules and ``aiaudit`` entry points, through one path.

Built-in checks (``aiaudit.checks.*``) and reporters (``aiaudit.reporters.*``) are found by
listing their packages and registered with :meth:`pluggy.PluginManager.register`, exactly as
the modules named by third-party ``aiaudit`` entry points are.  Nothing happens at import.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType
from typing import Iterable

import pluggy

from aiaudit import hookspecs
from aiaudit.api import CheckSpec, ReporterSpec, RulesetSource
from aiaudit.errors import UsageError

ENTRY_POINT_GROUP = "aiaudit"
BUILTIN_PACKAGES = ("aiaudit.checks", "aiaudit.reporters")
BUILTIN_MODULES = ("aiaudit.builtin_rulesets",)


@dataclass(frozen=True)
class Registry:
    """Everything the plugins provide, keyed by id/name."""

    checks: dict[str, CheckSpec]
    reporters: dict[str, ReporterSpec]
    rulesets: dict[str, RulesetSource]
    plugins: tuple[str, ...]
    """Names of the registered plugins (modules), for ``--version`` and debugging."""


def builtin_modules() -> list[ModuleType]:
    """Import and return every built-in plugin module."""
    mods = [importlib.import_module(name) for name in BUILTIN_MODULES]
    for pkg_name in BUILTIN_PACKAGES:
        pkg = importlib.import_module(pkg_name)
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if not info.name.startswith("_"):
                mods.append(importlib.import_module(f"{pkg_name}.{info.name}"))
    return mods


def make_manager(
    *, entry_points: bool = True, extra: Iterable[object] = ()
) -> pluggy.PluginManager:
    """A plugin manager with the built-ins, ``extra`` objects and (optionally) the
    ``aiaudit`` entry points registered."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for mod in builtin_modules():
        pm.register(mod, name=mod.__name__)
    for obj in extra:
        pm.register(obj)
    if entry_points:
        for name, target in find_entry_points(ENTRY_POINT_GROUP):
            if pm.get_plugin(name) is not None or pm.is_blocked(name):
                continue
            try:
                mod = _load_target(target)
            except Exception as exc:  # a broken third-party plugin is a usage problem
                raise UsageError(
                    f"could not load '{ENTRY_POINT_GROUP}' plugin {name} ({target}): {exc}"
                ) from exc
            pm.register(mod, name=name)
    return pm


def find_entry_points(group: str) -> list[tuple[str, str]]:
    """``(name, "module:attr")`` for every entry point in ``group`` of the distributions
    on ``sys.path``.

    Reads ``*.dist-info/entry_points.txt`` (and ``*.egg-info``) directly: the same files
    :mod:`importlib.metadata` reads, without importing it (it pulls in the email package,
    a large share of a scan's start-up time).  The first distribution on ``sys.path`` wins
    for a duplicated name, as in importlib.metadata.
    """
    import os
    import sys

    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for dist in sorted(names):
            if not dist.endswith((".dist-info", ".egg-info")):
                continue
            project = dist.rsplit(".", 1)[0].split("-")[0].lower().replace("_", "-")
            if project in seen:
                continue
            seen.add(project)
            path = os.path.join(entry or ".", dist, "entry_points.txt")
            try:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            out += _parse_entry_points(text, group)
    return out


def _parse_entry_points(text: str, group: str) -> list[tuple[str, str]]:
    """Entries of ``[group]`` in an ``entry_points.txt`` (INI-style) file."""
    out = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if section == group and "=" in line:
            name, _, value = line.partition("=")
            out.append((name.strip(), value.strip()))
    return out


def _load_target(target: str) -> object:
    """Import ``module`` or ``module:attr`` (extras in brackets ignored)."""
    target = target.split("[", 1)[0].strip()
    mod_name, _, attr = target.partition(":")
    obj: object = importlib.import_module(mod_name.strip())
    for part in filter(None, attr.strip().split(".")):
        obj = getattr(obj, part)
    return obj


def collect(pm: pluggy.PluginManager) -> Registry:
    """Call the registration hooks and index what they return; duplicates are errors."""
    checks: dict[str, CheckSpec] = {}
    reporters: dict[str, ReporterSpec] = {}
    rulesets: dict[str, RulesetSource] = {}
    for specs in pm.hook.aiaudit_register_checks():
        for spec in specs:
            if spec.id in checks:
                raise UsageError(f"two plugins register check {spec.id!r}")
            checks[spec.id] = spec
    for specs in pm.hook.aiaudit_register_reporters():
        for rep in specs:
            if rep.name in reporters:
                raise UsageError(f"two plugins register reporter {rep.name!r}")
            reporters[rep.name] = rep
    # pluggy calls later-registered plugins first; keep the first registration (built-in)
    # unless a plugin deliberately ships a ruleset under a new name.
    for sources in reversed(pm.hook.aiaudit_register_rulesets()):
        for src in sources:
            rulesets.setdefault(src.name, src)
    names = tuple(name for name, _ in pm.list_name_plugin())
    return Registry(checks, reporters, rulesets, names)


_REGISTRY: Registry | None = None


def registry() -> Registry:
    """The process-wide registry (built once, on first use)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = collect(make_manager())
    return _REGISTRY
