"""Plugin discovery: built-in modules and ``aiaudit`` entry points, through one path.

Built-in checks (``aiaudit.checks.*``) and reporters (``aiaudit.reporters.*``) are found by
listing their packages and registered with :meth:`pluggy.PluginManager.register`, exactly as
the modules named by third-party ``aiaudit`` entry points are.  Nothing happens at import.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Iterable, Iterator, Mapping, TypeVar

import pluggy

from aiaudit import hookspecs
from aiaudit.api import CheckSpec, ReporterSpec, RulesetSource
from aiaudit.errors import UsageError
from aiaudit.records import record

ENTRY_POINT_GROUP = "aiaudit"
BUILTIN_PACKAGES = ("aiaudit.checks", "aiaudit.reporters")
BUILTIN_MODULES = ("aiaudit.builtin_rulesets",)


@record
class Registry:
    """Everything the plugins provide, keyed by id/name."""

    checks: Mapping[str, CheckSpec]
    reporters: Mapping[str, ReporterSpec]
    rulesets: Mapping[str, RulesetSource]
    plugins: tuple[str, ...]
    """Names of the plugins registered when the registry was built."""


T = TypeVar("T")


class LazyTable(Mapping[str, T]):
    """A read-only mapping whose built-in entries are imported on first use.

    ``manifest`` names the module that provides each built-in key; a lookup imports only
    that module.  Iteration, ``len`` and a key the manifest does not know import every
    built-in module first, so the table always answers as if everything were loaded.
    """

    def __init__(self, loaded: dict[str, T], manifest: Mapping[str, str],
                 loader: _Loader) -> None:
        self._loaded = loaded
        self._manifest = manifest
        self._loader = loader

    def __getitem__(self, key: str) -> T:
        if key not in self._loaded:
            mod = self._manifest.get(key)
            if mod is not None:
                self._loader.load_module(mod)
            if key not in self._loaded:  # unknown, or a stale manifest
                self._loader.load_all()
        return self._loaded[key]

    def __contains__(self, key: object) -> bool:
        if key in self._loaded or key in self._manifest:
            return True
        self._loader.load_all()
        return key in self._loaded

    def __iter__(self) -> Iterator[str]:
        self._loader.load_all()
        return iter(dict(self._loaded))

    def __len__(self) -> int:
        self._loader.load_all()
        return len(self._loaded)


class _Loader:
    """Registers plugin modules with pluggy, one at a time, and indexes what their
    registration hooks return.  Third-party entry points are registered at once (their
    ids are unknown until then); built-in check and reporter modules on first use."""

    def __init__(self, entry_points: bool = True, extra: Iterable[object] = ()) -> None:
        from aiaudit.manifest import BUILTIN_CHECKS, BUILTIN_REPORTERS

        self.pm = _PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.checks: dict[str, CheckSpec] = {}
        self.reporters: dict[str, ReporterSpec] = {}
        self.rulesets: dict[str, RulesetSource] = {}
        self.all_loaded = False
        for name in BUILTIN_MODULES:
            self.load_module(name)
        for i, obj in enumerate(extra):
            self.register(obj, f"extra-{i}")
        if entry_points:
            for name, target in find_entry_points(ENTRY_POINT_GROUP):
                if self.pm.get_plugin(name) is not None or self.pm.is_blocked(name):
                    continue
                try:
                    mod = _load_target(target)
                except Exception as exc:  # a broken third-party plugin is a usage problem
                    raise UsageError(
                        f"could not load '{ENTRY_POINT_GROUP}' plugin {name} ({target}): {exc}"
                    ) from exc
                self.register(mod, name)
        self.registry = Registry(LazyTable(self.checks, BUILTIN_CHECKS, self),
                                 LazyTable(self.reporters, BUILTIN_REPORTERS, self),
                                 self.rulesets,
                                 tuple(n for n, _ in self.pm.list_name_plugin()))

    def load_module(self, name: str) -> None:
        """Import built-in module ``name`` and register it (once)."""
        if self.pm.get_plugin(name) is None:
            self.register(importlib.import_module(name), name)

    def load_all(self) -> None:
        """Register every built-in module."""
        if not self.all_loaded:
            self.all_loaded = True
            for mod in builtin_modules():
                if self.pm.get_plugin(mod.__name__) is None:
                    self.register(mod, mod.__name__)

    def register(self, mod: object, name: str) -> None:
        """Register ``mod`` with pluggy and index the specs its hook implementations
        return (a duplicate check id or reporter name is an error)."""
        self.pm.register(mod, name=name)
        hook = self.pm.hook
        for impl in hook.aiaudit_register_checks.get_hookimpls():
            if impl.plugin is mod:
                for spec in impl.function():
                    if spec.id in self.checks:
                        raise UsageError(f"two plugins register check {spec.id!r}")
                    self.checks[spec.id] = spec
        for impl in hook.aiaudit_register_reporters.get_hookimpls():
            if impl.plugin is mod:
                for rep in impl.function():
                    if rep.name in self.reporters:
                        raise UsageError(f"two plugins register reporter {rep.name!r}")
                    self.reporters[rep.name] = rep
        for impl in hook.aiaudit_register_rulesets.get_hookimpls():
            if impl.plugin is mod:
                for src in impl.function():
                    self.rulesets.setdefault(src.name, src)  # the first (built-in) wins


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, looking only at attributes that can be aiaudit hooks.

    ``register`` asks :meth:`parse_hookimpl_opts` about every name in ``dir(plugin)``, and
    pluggy answers with ``inspect.getattr_static``: 4 ms for the ~800 names of the built-in
    modules.  Every hook specification is named ``aiaudit_*`` (``hookspecs``), so no other
    name can implement one; this is pluggy's documented override point, and built-in and
    third-party plugins still go through it alike."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:  # pluggy's signature
        if not name.startswith(HOOK_PREFIX):
            return None
        return super().parse_hookimpl_opts(plugin, name)


HOOK_PREFIX = "aiaudit_"
"""Every hook specification's name starts with this."""


def builtin_modules() -> list[ModuleType]:
    """Import and return every built-in plugin module."""
    import pkgutil

    mods = [importlib.import_module(name) for name in BUILTIN_MODULES]
    for pkg_name in BUILTIN_PACKAGES:
        pkg = importlib.import_module(pkg_name)
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if not info.name.startswith("_"):
                mods.append(importlib.import_module(f"{pkg_name}.{info.name}"))
    return mods


def find_entry_points(group: str) -> list[tuple[str, str]]:
    """``(name, "module:attr")`` for every entry point in ``group`` of the distributions
    on ``sys.path``.

    Reads ``*.dist-info/entry_points.txt`` (and ``*.egg-info``) directly: the same files
    :mod:`importlib.metadata` reads, without importing it (it pulls in the email package,
    a large share of a scan's start-up time).  The first distribution on ``sys.path`` wins
    for a duplicated name, as in importlib.metadata.  A file that does not contain the
    group's name is not decoded or parsed (callgrind: 53 k instructions per installed
    distribution before, 13 k after).
    """
    import os
    import sys

    needle = group.encode()
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
            data = _read_bytes(os.path.join(entry or ".", dist, "entry_points.txt"))
            if data is not None and needle in data:
                out += _parse_entry_points(data.decode("utf-8"), group)
    return out


def _read_bytes(path: str) -> bytes | None:
    """The bytes of ``path``, ``None`` if it cannot be read (most distributions have no
    entry_points.txt): ``os.open``/``os.read`` without a file object, half the cost."""
    import os

    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


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


_REGISTRY: Registry | None = None


def build_registry(*, entry_points: bool = True, extra: Iterable[object] = ()) -> Registry:
    """A new registry: built-ins (imported lazily), ``extra`` plugin objects and, unless
    ``entry_points`` is false, the third-party ``aiaudit`` entry points."""
    return _Loader(entry_points, extra).registry


def registry() -> Registry:
    """The process-wide registry (built once, on first use; built-in check and reporter
    modules are imported when a rule or format first needs them)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = build_registry()
    return _REGISTRY
