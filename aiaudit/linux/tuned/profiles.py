"""tuned as the scanned root will run it: enablement, active profile, merged settings.

Sources: redhat-performance/tuned ``tuned/consts.py`` (``/etc/tuned/active_profile``, may
name several profiles separated by spaces, merged in order), ``tuned/profiles/locator.py``
(the last directory of ``profile_dirs`` that has the profile wins; defaults
``/usr/lib/tuned``, ``/usr/lib/tuned/profiles``, ``/etc/tuned``, ``/etc/tuned/profiles``),
``tuned/profiles/loader.py`` (``include=`` chains; see :mod:`aiaudit.linux.tuned.conf`).
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.systemd import units as systemd
from aiaudit.linux.tuned import conf as tp

ACTIVE_PROFILE = "/etc/tuned/active_profile"
MAX_PROFILES = 32
"""Most profiles ``active_profile`` may merge (tuned sets one to a few; a broken or hostile
file with thousands of words would mean thousands of profile lookups)."""
PROFILE_DIRS = ("/etc/tuned/profiles", "/etc/tuned", "/usr/lib/tuned/profiles",
                "/usr/lib/tuned")
"""Profile directories, highest precedence first."""
MAX_DEPTH = 32
MAIN_CONF = "/etc/tuned/tuned-main.conf"


@record
class TunedState:
    """tuned on the scanned root."""

    enabled: bool
    reason: str
    """Why it is (not) enabled."""
    names: tuple[str, ...]
    """Active profile names (empty: none selected)."""
    profile: tp.Profile | None
    """The merged active profile (``None`` when none could be loaded)."""
    files: tuple[str, ...]
    """Profile files in load order (includes first)."""
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        """True if tuned starts at boot with a loaded profile."""
        return self.enabled and self.profile is not None

    def get(self, plugin: str, key: str) -> tp.Option | None:
        """An option of the active profile when tuned is active, else ``None``."""
        if not self.active:
            return None
        assert self.profile is not None
        return self.profile.get(plugin, key)

    def describe(self) -> str:
        """``tuned profile latency-performance`` style text."""
        return f"tuned profile {' '.join(self.names)}"

    def lacks(self, plugin: str, key: str) -> str:
        """That tuned does not set ``[plugin] key`` at boot, and why, in display form (for
        a ``default`` evidence): ``no [cpu] governor in tuned profile X`` or ``no tuned
        [cpu] governor (tuned not enabled)``."""
        if self.active:
            return f"no [{plugin}] {key} in {self.describe()}"
        why = "tuned not enabled" if not self.enabled else "no tuned profile could be loaded"
        return f"no tuned [{plugin}] {key} ({why})"


def profile_dirs(host: Host) -> tuple[str, ...]:
    """Profile directories, highest precedence first: ``profile_dirs`` of
    ``/etc/tuned/tuned-main.conf`` (later entries win) or the defaults."""
    try:
        text = host.try_read_text(MAIN_CONF) or ""
    except HostError:
        text = ""
    for line in text.splitlines():
        key, eq, val = line.partition("=")
        if eq and key.strip() == "profile_dirs":
            dirs = [d.strip().rstrip("/") for d in val.split(",") if d.strip()]
            if dirs and all(d.startswith("/") for d in dirs):
                return tuple(reversed(dirs))
    return PROFILE_DIRS


def find_profile(host: Host, name: str) -> str | None:
    """Host path of ``<name>/tuned.conf`` in the winning profile directory."""
    if not name or "/" in name or name in (".", ".."):
        return None
    for d in profile_dirs(host):
        p = f"{d}/{name}/tuned.conf"
        if host.is_file(p):
            return p
    return None


def load(host: Host) -> TunedState:
    """tuned's enablement and merged active profile (memoized per run)."""
    return host.memo(("tuned",), lambda: _load(host))


def _load(host: Host) -> TunedState:
    try:
        en = systemd.is_enabled(host, "tuned.service")
        enabled, reason = en.enabled, en.reason
    except HostError as exc:
        enabled, reason = False, f"tuned.service enablement unknown: {exc}"
    problems: list[str] = []
    notes: list[str] = []
    try:
        text = host.try_read_text(ACTIVE_PROFILE)
    except HostError as exc:
        return TunedState(enabled, reason, (), None, (), (str(exc),))
    names = tuple(dict.fromkeys(text.split())) if text else ()  # in order, once each
    if len(names) > MAX_PROFILES:
        return TunedState(enabled, reason, (), None, (), (
            f"{ACTIVE_PROFILE} names {len(names)} profiles (more than {MAX_PROFILES}): "
            "not a tuned profile list",))
    if not names:
        if enabled:
            notes.append(f"{ACTIVE_PROFILE} is absent or empty: tuned picks its recommended "
                         "profile at first start")
        return TunedState(enabled, reason, (), None, (), (), tuple(notes))
    loaded: list[tp.Profile] = []
    seen: set[str] = set()

    def visit(name: str, depth: int) -> None:
        if "${" in name:
            notes.append(f"tuned include {name!r} uses variables; not followed")
            return
        path = find_profile(host, name)
        if path is None:
            problems.append(f"tuned profile {name!r} not found in "
                            f"{', '.join(profile_dirs(host))}")
            return
        if path in seen or depth > MAX_DEPTH:
            notes.append(f"tuned profile {name!r} already loaded (include cycle), skipped")
            return
        seen.add(path)
        try:
            prof = tp.parse(host.read_text(path), name, path)
        except (HostError, ParseError) as exc:
            problems.append(str(exc))
            return
        for inc in prof.includes:
            visit(inc, depth + 1)
        loaded.append(prof)

    for n in names:
        visit(n, 0)
    merged = tp.merge(loaded) if loaded and not problems else None
    return TunedState(enabled, reason, names, merged, tuple(p.file for p in loaded),
                      tuple(problems), tuple(notes))
