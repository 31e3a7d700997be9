"""systemd units as the scanned root defines them: unit files, drop-ins, enablement.

Read through :class:`~aiaudit.core.host.Host` only, so it works offline on an image.  Sources:
systemd.unit(5) ("Unit File Load Path", drop-ins), systemctl(1) ``is-enabled``,
systemd-system.conf(5), standard-conf.xml.
"""

from __future__ import annotations

from typing import Iterable

from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.systemd import unitfile
from aiaudit.linux.systemd.unitfile import Assignment

UNIT_DIRS = (
    "/etc/systemd/system.control",
    "/run/systemd/system.control",
    "/run/systemd/transient",
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
)
"""System unit search path in priority order (systemd.unit(5)); ``/lib`` for split-usr."""

ENABLE_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system",
               "/usr/lib/systemd/system", "/lib/systemd/system")
"""Where ``.wants/``, ``.requires/`` and ``.upholds/`` symlinks make a unit start at boot."""

SYSTEM_CONF_DIRS = ("/etc/systemd/system.conf.d", "/run/systemd/system.conf.d",
                    "/usr/local/lib/systemd/system.conf.d", "/usr/lib/systemd/system.conf.d")


@record
class Unit:
    """A unit as systemd would load it."""

    name: str
    path: str | None
    """The unit file used (``None`` when there is none)."""
    masked: bool
    dropins: tuple[str, ...]
    assignments: tuple[Assignment, ...]
    """Unit file then drop-ins, in the order systemd applies them."""

    @property
    def exists(self) -> bool:
        """True if a unit file was found (and it is not masked)."""
        return self.path is not None and not self.masked

    def get(self, section: str, key: str) -> Assignment | None:
        """Effective single-valued setting (last assignment wins)."""
        return unitfile.last(list(self.assignments), section, key)

    def get_all(self, section: str, key: str) -> list[Assignment]:
        """Effective list-valued setting (empty assignment resets)."""
        return unitfile.values(list(self.assignments), section, key)


def _template(name: str) -> str | None:
    """``foo@bar.service`` -> ``foo@.service``."""
    if "@" in name:
        prefix, _, rest = name.partition("@")
        _, dot, suffix = rest.rpartition(".")
        if dot:
            return f"{prefix}@.{suffix}"
    return None


def _dropin_dirs(name: str) -> list[str]:
    """Drop-in directory names for a unit, lowest precedence first: the type-level
    ``service.d``, prefix drop-ins (``foo-.service.d`` for ``foo-bar.service``), the
    template's, then the unit's own."""
    base, _, suffix = name.rpartition(".")
    out = [f"{suffix}.d"]
    parts = base.split("-")
    for i in range(1, len(parts)):
        out.append("-".join(parts[:i]) + f"-.{suffix}.d")
    tmpl = _template(name)
    if tmpl:
        out.append(f"{tmpl}.d")
    out.append(f"{name}.d")
    return out


def load_unit(host: Host, name: str) -> Unit:
    """Find ``name`` on the unit path and merge its drop-ins.

    Unreadable unit or drop-in files raise :class:`~aiaudit.core.errors.HostError`; a binary one
    :class:`~aiaudit.core.errors.ParseError`.
    """
    return host.memo(("systemd-unit", name), lambda: _load_unit(host, name))


def _dir_names(host: Host, d: str) -> frozenset[str] | None:
    """Names in unit directory ``d`` (memoized per run); ``None`` when it cannot be listed.
    Loading a unit looks for its file and about 30 drop-in directories in each of the 8
    directories of the search path; almost none exist, and one listing of each directory
    answers them all."""

    def load() -> frozenset[str] | None:
        try:
            return frozenset(host.listdir(d))
        except HostError:
            return None

    return host.memo(("systemd-dir", d), load)


def _absent(host: Host, d: str, name: str) -> bool:
    """True when ``d/name`` surely does not exist (not in the listing of ``d``)."""
    names = _dir_names(host, d)
    return names is not None and name not in names


def _unit_file(host: Host, name: str) -> tuple[str | None, bool]:
    """(path, masked) of the file that defines unit ``name``: the first of the unit
    directories that has it (or, for an instance, its template), or a mask there."""
    candidates = [name]
    tmpl = _template(name)
    if tmpl:
        candidates.append(tmpl)
    for cand in candidates:
        for d in UNIT_DIRS:
            if _absent(host, d, cand):
                continue
            p = f"{d}/{cand}"
            if host.is_masked(p):
                return p, True
            if host.is_file(p):
                return p, False
    return None, False


def _dropins(host: Host, name: str) -> list[str]:
    """The drop-in files of unit ``name`` in the order systemd applies them.

    systemd sorts all drop-ins of a unit by file name, whatever directory level they come
    from (``foo.service.d``, ``service.d``...); a unit-specific file with the same name as a
    type-level one replaces it, and within one level the first unit directory wins."""
    by_name: dict[str, str] = {}
    for ddir in _dropin_dirs(name):
        names: dict[str, str] = {}
        for d in UNIT_DIRS:
            if _absent(host, d, ddir):
                continue
            for fn in host.listdir(f"{d}/{ddir}"):
                if fn.endswith(".conf") and not fn.startswith(".") and fn not in names:
                    names[fn] = f"{d}/{ddir}/{fn}"
        for fn in sorted(names):
            by_name[fn] = names[fn]
    return [by_name[fn] for fn in sorted(by_name)]


def _load_unit(host: Host, name: str) -> Unit:
    path, masked = _unit_file(host, name)
    if masked:
        return Unit(name, path, True, (), ())
    assignments: list[Assignment] = []
    if path:
        assignments += unitfile.parse(host.read_text(path), path)
    dropins = _dropins(host, name)
    for p in dropins:
        if host.is_masked(p):
            continue
        assignments += unitfile.parse(host.read_text(p), p)
    return Unit(name, path, False, tuple(dropins), tuple(assignments))


@record
class Enablement:
    """Whether a unit starts at boot, and why."""

    enabled: bool
    masked: bool
    reason: str
    evidence: str | None = None
    """The wants/requires symlink (host path) that enables it, or the mask link."""


WANTS_SUFFIXES = (".wants", ".requires", ".upholds")


def wants_dirs(host: Host) -> list[tuple[str, str, list[str] | None]]:
    """``(unit dir, *.wants|*.requires|*.upholds subdir, its entries)`` for every
    :data:`ENABLE_DIRS` directory that can be listed, in search order (memoized per run);
    entries are ``None`` where the subdirectory cannot be listed."""

    def load() -> list[tuple[str, str, list[str] | None]]:
        out: list[tuple[str, str, list[str] | None]] = []
        for d in ENABLE_DIRS:
            try:
                subs = host.listdir(d)
            except HostError:
                continue
            for sub in subs:
                if sub.endswith(WANTS_SUFFIXES):
                    try:
                        names: list[str] | None = host.listdir(f"{d}/{sub}")
                    except HostError:
                        names = None
                    out.append((d, sub, names))
        return out

    return host.memo(("systemd-wants",), load)


def is_enabled(host: Host, name: str) -> Enablement:
    """Does ``name`` start at boot?  True when a ``*.wants/``, ``*.requires/`` or
    ``*.upholds/`` directory of any unit directory links to it (``systemctl enable`` writes
    them under /etc; vendors ship static ones under /usr/lib), and it is not masked."""
    for d in ("/etc/systemd/system", "/run/systemd/system"):
        if host.is_masked(f"{d}/{name}"):
            return Enablement(False, True, f"{name} is masked", f"{d}/{name}")
    tmpl = _template(name)
    for d, sub, names in wants_dirs(host):
        for link in (name, tmpl) if tmpl else (name,):
            if not link:
                continue
            # a listed entry exists as far as lstat goes (dangling links are listed too)
            if link in names if names is not None else host.lstat_exists(f"{d}/{sub}/{link}"):
                return Enablement(True, False, f"{name} is wanted by {sub[:sub.rfind('.')]}",
                                  f"{d}/{sub}/{link}")
    return Enablement(False, False, f"no target wants {name} (not enabled)")


def search_text(names: Iterable[str]) -> str:
    """Where :func:`load_unit` looks for the unit files ``names``, for a ``default``
    evidence text: ``a.service, b.service in etc/systemd/system.control, ...`` (the
    :data:`UNIT_DIRS` search path, root-relative)."""
    return f"{', '.join(names)} in {', '.join(d.lstrip('/') for d in UNIT_DIRS)}"


def unit_evidence(host: Host, name: str, en: Enablement | None = None) -> Evidence:
    """What decided whether unit ``name`` starts at boot: the link that enables or masks
    it, else the unit file that is installed but not enabled, else (a ``default``: no file
    to point at) the search path where no unit file was found.  ``en`` is
    :func:`is_enabled`'s answer when the caller has it."""
    en = en if en is not None else is_enabled(host, name)
    if en.evidence:
        return Evidence.file(en.evidence, None, en.reason)
    try:
        unit = load_unit(host, name)
    except (HostError, ParseError) as exc:
        return Evidence.default(f"unit {name}", f"cannot be read: {exc}")
    if unit.path is not None:
        return Evidence.file(unit.path, None, en.reason)
    return Evidence.default(f"unit {search_text((name,))}", "not installed")


def manager_config(host: Host) -> list[Assignment]:
    """``/etc/systemd/system.conf`` then its drop-ins (sorted by name across the
    ``system.conf.d`` directories; same name: /etc beats /run beats /usr)."""
    out: list[Assignment] = []
    try:
        out += unitfile.parse(host.read_text("/etc/systemd/system.conf"),
                              "/etc/systemd/system.conf")
    except NotFound:
        pass
    names: dict[str, str] = {}
    for d in SYSTEM_CONF_DIRS:
        for fn in host.listdir(d):
            if fn.endswith(".conf") and not fn.startswith(".") and fn not in names:
                names[fn] = f"{d}/{fn}"
    for fn in sorted(names):
        if not host.is_masked(names[fn]):
            out += unitfile.parse(host.read_text(names[fn]), names[fn])
    return out
