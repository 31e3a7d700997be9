# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Plugin discovery: built-in modules and ``aiaudit`` entry points, through one path.

Built-in checks (``aiaudit.checks.*``) and reporters (``aiaudit.reporters.*``) are found by
listing their packages and registered with :meth:`pluggy.PluginManager.register`, exactly as
the modules named by third-party ``aiaudit`` entry points are.  Nothing happens at import.
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, TypeVar

import pluggy

from aiaudit import hookspecs
from aiaudit.api import CheckSpec, ReporterSpec, RulesetSource
from aiaudit.core.errors import UsageError
from aiaudit.core.startup.entrypoints import (
    EntryPoint,
    find_entry_points,
)
from aiaudit.core.startup.records import record

if TYPE_CHECKING:
    from aiaudit.core.host import Deadline

ENTRY_POINT_GROUP = "aiaudit"
BUILTIN_PACKAGES = ("aiaudit.checks", "aiaudit.reporters")
BUILTIN_MODULES = ("aiaudit.core.ruleset.builtin",)


@record
class Registry:
    """Everything the plugins provide, keyed by id/name."""

    checks: Mapping[str, CheckSpec]
    reporters: Mapping[str, ReporterSpec]
    rulesets: Mapping[str, RulesetSource]
    plugins: tuple[str, ...]
    """Names of the plugins registered when the registry was built."""


T = TypeVar("T")


def _builtin_name(kind: str, key: str) -> str | None:
    """The module name the layout rule gives check or reporter ``key`` (check
    ``kernel.sysctl`` is ``aiaudit.checks.kernel.sysctl``, reporter ``json`` is
    ``aiaudit.reporters.json``), or ``None`` for a key that cannot name a module."""
    package = BUILTIN_PACKAGES[0] if kind == "check" else BUILTIN_PACKAGES[1]
    if not key or not all(part.isidentifier() and not part.startswith("_")
                          for part in key.split(".")):
        return None
    return f"{package}.{key}"


def builtin_module(kind: str, key: str) -> str | None:
    """The built-in module that provides check ``key`` or reporter ``key`` by the layout
    rule, or ``None`` when no such module exists.  Found without importing the module itself
    (only its parent packages), so a third-party plugin cannot claim a built-in id before
    the built-in module is loaded."""
    import importlib.util

    name = _builtin_name(kind, key)
    if name is None:
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent that is a module, not a package
        return None
    # a package (an area such as checks/kernel/) is not a check module
    if spec is None or not spec.origin or spec.submodule_search_locations is not None:
        return None
    return name


class LazyTable(Mapping[str, T]):
    """A read-only mapping whose built-in entries are imported on first use.

    A lookup imports only the module the layout rule names for the key (no search first:
    one import, the finder's work done once).  Iteration, ``len`` and a key no such module
    registers import every built-in module first, so the table always answers as if
    everything were loaded.
    """

    def __init__(self, loaded: dict[str, T], kind: str, loader: _Loader) -> None:
        self._loaded = loaded
        self._kind = kind
        self._loader = loader

    def _load(self, key: str) -> bool:
        """Import the module the layout rule names for ``key``; whether it registered it."""
        name = _builtin_name(self._kind, key)
        if name is not None:
            self._loader.load_builtin(name)
        return key in self._loaded

    def __getitem__(self, key: str) -> T:
        if key not in self._loaded and not self._load(key):
            self._loader.load_all()  # unknown here: look everywhere
        return self._loaded[key]

    def __contains__(self, key: object) -> bool:
        if key in self._loaded or (isinstance(key, str) and self._load(key)):
            return True
        self._loader.load_all()
        return key in self._loaded

    def __iter__(self) -> Iterator[str]:
        self._loader.load_all()
        return iter(dict(self._loaded))

    def __len__(self) -> int:
        self._loader.load_all()
        return len(self._loaded)




BUILTIN_ORIGIN = "aiaudit (built-in)"
"""How messages name the built-in plugins."""


class _Loader:
    """Registers plugin modules with pluggy, one at a time, and indexes what their
    registration hooks return.  Third-party entry points are registered at once (their
    ids are unknown until then); built-in check and reporter modules on first use.

    A check id or reporter name registered twice is a :class:`UsageError` naming both
    plugins, whichever comes first: a third-party plugin can neither replace a built-in
    check (the layout rule names every built-in module before it is imported) nor another
    plugin's.  While third-party plugins load, anything they print goes to stderr (stdout
    carries the report), and with a ``deadline`` a plugin whose import or registration
    does not return in time is a :class:`UsageError` too (see :func:`_bounded`)."""

    def __init__(self, entry_points: bool = True, extra: Iterable[object] = (),
                 deadline: Deadline | _After | None = None, command: str = "scan") -> None:
        self.pm = _PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.checks: dict[str, CheckSpec] = {}
        self.reporters: dict[str, ReporterSpec] = {}
        self.rulesets: dict[str, RulesetSource] = {}
        self.owners: dict[tuple[str, str], str] = {}
        """(``check``/``reporter``, id) -> who registered it (for the duplicate message)."""
        self.all_loaded = False
        for name in BUILTIN_MODULES:
            self.load_module(name)
        third: list[tuple[object, str, str] | EntryPoint] = [
            (obj, f"extra-{i}", f"plugin object extra-{i} ({_module_name(obj)})")
            for i, obj in enumerate(extra)]
        if entry_points:
            third += find_entry_points(ENTRY_POINT_GROUP)
        if third:
            _bounded(lambda progress: self._load_third_party(third, progress), deadline,
                     command)
        self.registry = Registry(LazyTable(self.checks, "check", self),
                                 LazyTable(self.reporters, "reporter", self),
                                 self.rulesets,
                                 tuple(n for n, _ in self.pm.list_name_plugin()))

    def _load_third_party(self, plugins: list[tuple[object, str, str] | EntryPoint],
                          progress: list[str]) -> None:
        """Import and register every third-party plugin, stdout sent to stderr."""

        with _stdout_to_stderr():
            for item in plugins:
                if isinstance(item, EntryPoint):
                    if self.pm.get_plugin(item.name) is not None or \
                            self.pm.is_blocked(item.name):
                        continue
                    who = item.describe()
                    progress.append(who)
                    try:
                        mod = _load_target(item.target)
                    except Exception as exc:  # a broken third-party plugin: a usage problem
                        raise UsageError(f"could not load {who}: "
                                         f"{type(exc).__name__}: {exc}") from exc
                    except BaseException as exc:  # sys.exit() or the like at import
                        raise UsageError(f"could not load {who}: it raised "
                                         f"{type(exc).__name__} on import") from None
                    self.register(mod, item.name, who)
                else:
                    obj, name, who = item
                    progress.append(who)
                    self.register(obj, name, who)

    def load_module(self, name: str) -> None:
        """Import built-in module ``name`` and register it (once)."""
        if self.pm.get_plugin(name) is None:
            self.register(importlib.import_module(name), name)

    def load_builtin(self, name: str) -> None:
        """Import and register built-in module ``name`` if it exists; nothing when it (or a
        package on its way) does not.  An import error inside an existing module is
        raised."""
        if self.pm.get_plugin(name) is not None:
            return
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if missing and (name == missing or name.startswith(missing + ".")):
                return
            raise
        self.register(module, name)

    def load_all(self) -> None:
        """Register every built-in module."""
        if not self.all_loaded:
            self.all_loaded = True
            for mod in builtin_modules():
                if self.pm.get_plugin(mod.__name__) is None:
                    self.register(mod, mod.__name__)

    def register(self, mod: object, name: str, origin: str = "") -> None:
        """Register ``mod`` with pluggy and index the specs its hook implementations
        return.  ``origin`` names a third-party plugin (empty for a built-in module): it is
        stamped on its specs, so that the runner isolates its checks and error results
        name it.  A duplicate check id or reporter name is a :class:`UsageError`."""
        self.pm.register(mod, name=name)
        hook = self.pm.hook
        who = origin or f"{BUILTIN_ORIGIN} module {name}"
        for impl in hook.aiaudit_register_checks.get_hookimpls():
            if impl.plugin is mod:
                for spec in self._call(impl.function, origin, "checks"):
                    if not isinstance(spec, CheckSpec):
                        raise UsageError(f"{who} registered {type(spec).__name__} "
                                         "as a check (a CheckSpec was expected)")
                    self._claim("check", spec.id, who, origin)
                    self.checks[spec.id] = replace(spec, origin=origin) if origin else spec
        for impl in hook.aiaudit_register_reporters.get_hookimpls():
            if impl.plugin is mod:
                for rep in self._call(impl.function, origin, "reporters"):
                    if not isinstance(rep, ReporterSpec):
                        raise UsageError(f"{who} registered {type(rep).__name__} "
                                         "as a reporter (a ReporterSpec was expected)")
                    self._claim("reporter", rep.name, who, origin)
                    self.reporters[rep.name] = replace(rep, origin=origin) if origin else rep
        for impl in hook.aiaudit_register_rulesets.get_hookimpls():
            if impl.plugin is mod:
                for src in self._call(impl.function, origin, "rulesets"):
                    self.rulesets.setdefault(src.name, src)  # the first (built-in) wins

    @staticmethod
    def _call(function: Any, origin: str, what: str) -> list[Any]:
        """The list a registration hook returns; a third-party hook that raises (even
        ``SystemExit``) or returns something else than a list is a :class:`UsageError`
        naming the plugin."""
        if not origin:
            return list(function())
        try:
            got = function()
            return list(got)
        except Exception as exc:
            raise UsageError(f"{origin}: registering its {what} failed: "
                             f"{type(exc).__name__}: {exc}") from exc
        except BaseException as exc:  # SystemExit, KeyboardInterrupt from plugin code
            raise UsageError(f"{origin}: registering its {what} raised "
                             f"{type(exc).__name__}") from None

    def _claim(self, kind: str, key: str, who: str, origin: str) -> None:
        """Record that ``who`` registers ``kind`` ``key``; a second registration of the
        same key (or a third-party one of a built-in key not imported yet) is an error."""
        first = self.owners.get((kind, key))
        if first is None and origin and (mod := builtin_module(kind, key)) is not None:
            first = f"{BUILTIN_ORIGIN} module {mod}"
        if first is not None:
            raise UsageError(
                f"{kind} {key!r} is registered twice: by {first} and by {who}; "
                f"a {kind} {'id' if kind == 'check' else 'name'} must be unique "
                "(uninstall or fix one of them)")
        self.owners[(kind, key)] = who


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send what is written to stdout, through ``sys.stdout`` or file descriptor 1, to
    stderr for the duration (stdout carries only the report)."""
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no stdout or stderr descriptor: sys.stdout only
        saved = -1
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.flush()
        if saved >= 0:
            os.dup2(saved, 1)
            os.close(saved)


def _module_name(obj: object) -> str:
    return getattr(obj, "__name__", None) or type(obj).__module__ + "." + type(obj).__name__


REGISTRATION_GRACE = 5.0
"""Seconds past the deadline after which a registration that holds the interpreter lock
(C code that never lets the waiting thread run) ends the process (see :func:`_bounded`)."""


def _bounded(load: Callable[[list[str]], None], deadline: Deadline | _After | None,
             command: str = "scan") -> None:
    """Run ``load`` (third-party plugin registration) within ``deadline`` (that of
    ``aiaudit COMMAND``, for the message).

    Without a deadline ``load`` runs here.  With one it runs in a daemon thread while this
    one waits; at the deadline the wait ends with a :class:`UsageError` naming the plugin
    that was loading (``load`` appends each to ``progress``), and the stuck thread is left
    behind (the CLI exits without joining it).  Python code that sleeps or loops lets the
    waiting thread run; C code that holds the interpreter lock does not, so a
    :mod:`faulthandler` watchdog (a C thread that needs no lock) ends the process
    :data:`REGISTRATION_GRACE` seconds past the deadline, with the stacks of every thread
    on stderr and exit status 1.  (Plugin code thus runs outside the main thread: one that
    installs a signal handler while it loads fails to load, a usage error naming it.  The
    alternative, a watchdog thread that ends the process, would leave no exception for an
    in-process caller to handle.)
    """
    remaining = None if deadline is None else deadline.remaining()
    if remaining is None:
        load([])
        return
    import faulthandler
    import threading

    progress: list[str] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def target() -> None:
        try:
            load(progress)
        except BaseException as exc:  # handed to the waiting thread
            failure.append(exc)
        finally:
            done.set()

    try:
        faulthandler.dump_traceback_later(remaining + REGISTRATION_GRACE, exit=True)
        armed = True
    except (RuntimeError, ValueError, OSError, AttributeError):  # no usable stderr
        armed = False
    try:
        threading.Thread(target=target, name="aiaudit-plugins", daemon=True).start()
        finished = done.wait(remaining)
    finally:
        if armed:
            faulthandler.cancel_dump_traceback_later()
    if not finished:
        who = progress[-1] if progress else "a third-party plugin"
        if command == "scan":
            raise UsageError(f"{who} did not finish loading within the scan deadline "
                             f"({remaining:.1f}s left): nothing was scanned")
        raise UsageError(f"{who} did not finish loading within the deadline of aiaudit "
                         f"{command} (--timeout, {remaining:.1f}s left): stopped")
    if failure:
        raise failure[0]


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
    """Import and return every built-in plugin module: the rulesets plugin, then every
    module under ``aiaudit.checks`` (at any depth: ``checks/<area>/<name>.py``) and
    ``aiaudit.reporters``, in name order.  Modules and packages whose name starts with
    ``_`` are helpers, not plugins."""
    import pkgutil

    mods = [importlib.import_module(name) for name in BUILTIN_MODULES]
    for pkg_name in BUILTIN_PACKAGES:
        pkg = importlib.import_module(pkg_name)
        infos = pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg_name}.")
        for info in sorted(infos, key=lambda i: i.name):
            leaf = info.name[len(pkg_name) + 1:]
            if info.ispkg or any(part.startswith("_") for part in leaf.split(".")):
                continue
            mods.append(importlib.import_module(info.name))
    return mods










def _load_target(target: str) -> object:
    """Import ``module`` or ``module:attr`` (extras in brackets ignored)."""
    target = target.split("[", 1)[0].strip()
    mod_name, _, attr = target.partition(":")
    obj: object = importlib.import_module(mod_name.strip())
    for part in filter(None, attr.strip().split(".")):
        obj = getattr(obj, part)
    return obj


_REGISTRY: Registry | None = None


def build_registry(*, entry_points: bool = True, extra: Iterable[object] = (),
                   deadline: Deadline | _After | None = None,
                   command: str = "scan") -> Registry:
    """A new registry: built-ins (imported lazily), ``extra`` plugin objects (treated as
    third-party plugins) and, unless ``entry_points`` is false, the third-party
    ``aiaudit`` entry points, loaded within ``deadline`` (of ``aiaudit COMMAND``) when
    given."""
    return _Loader(entry_points, extra, deadline, command).registry


class _After:
    """A deadline ``seconds`` from now, without importing :mod:`aiaudit.core.host`."""

    def __init__(self, seconds: float) -> None:
        import time

        self._time = time.monotonic
        self.at = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.at - self._time())


REGISTRATION_TIMEOUT = 60.0
"""Seconds third-party plugins may take to register when the caller gives no deadline (an
in-process caller; every command gives its own: ``--timeout``)."""


def registry(deadline: Deadline | None = None, command: str = "scan") -> Registry:
    """The process-wide registry (built once, on first use, its third-party plugins
    within ``deadline`` of ``aiaudit COMMAND``, else :data:`REGISTRATION_TIMEOUT`;
    built-in check and reporter modules are imported when a rule or format first needs
    them)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = build_registry(deadline=deadline or _After(REGISTRATION_TIMEOUT),
                                   command=command)
    return _REGISTRY
