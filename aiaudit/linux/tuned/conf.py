"""tuned profiles: ``tuned.conf`` syntax, ``include=`` and merging.

Sources: redhat-performance/tuned ``tuned/profiles/loader.py`` (``_load_profile``: the
profiles named by ``include=`` — split on ``,``/``;`` — load first, so the including profile
overrides them; a file already loaded is not loaded again), ``tuned/profiles/merger.py``
(sections merge option by option; ``replace=1`` replaces the whole section),
``tuned/profiles/unit.py`` (a section's plugin is ``type=`` or the section name;
``enabled=false`` turns it off), tuned.conf(5).
"""

from __future__ import annotations

from dataclasses import field

from aiaudit.core.errors import ParseError
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

_SECTION = lazy_pattern(r"^\[([^\]]+)\]\s*$")
_INCLUDE_SPLIT = lazy_pattern(r"\s*[,;]\s*")


@record
class Option:
    """One ``key=value`` of a profile."""

    value: str
    file: str
    line: int


@record(frozen=False)
class Unit:
    """A section (plugin instance) of a profile."""

    name: str
    options: dict[str, Option] = field(default_factory=dict)

    @property
    def type(self) -> str:
        """The plugin: ``type=`` or the section name."""
        t = self.options.get("type")
        return t.value.strip() if t else self.name

    @property
    def enabled(self) -> bool:
        """False when ``enabled=false`` (or 0/no/off)."""
        e = self.options.get("enabled")
        return e is None or e.value.strip().lower() not in ("0", "false", "no", "off", "n")


@record(frozen=False)
class Profile:
    """One parsed ``tuned.conf`` (or the merge of several)."""

    name: str
    file: str
    units: dict[str, Unit] = field(default_factory=dict)

    @property
    def includes(self) -> list[str]:
        """Profile names from ``[main] include=`` in order."""
        main = self.units.get("main")
        inc = main.options.get("include") if main else None
        if inc is None or not inc.value.strip():
            return []
        return [n for n in _INCLUDE_SPLIT().split(inc.value.strip()) if n]

    def get(self, plugin: str, key: str) -> Option | None:
        """The value of ``key`` in the (last) enabled unit of type ``plugin``."""
        found = None
        for unit in self.units.values():
            if unit.type == plugin and unit.enabled and key in unit.options:
                found = unit.options[key]
        return found


def parse(text: str, name: str, file: str = "") -> Profile:
    """Parse one ``tuned.conf``.  Options before any section go to ``[main]`` (configobj
    treats them as top level; tuned reads ``main`` only).  Raises :class:`ParseError` on
    binary content or a line that is neither a section, an option nor a comment."""
    if "\x00" in text:
        raise ParseError("binary content (NUL byte)", source=file)
    prof = Profile(name, file)
    unit = prof.units.setdefault("main", Unit("main"))
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        m = _SECTION().match(line)
        if m:
            sec = m.group(1).strip()
            unit = prof.units.setdefault(sec, Unit(sec))
            continue
        if "=" not in line:
            raise ParseError(f"line {n}: expected key=value: {line[:60]!r}", source=file)
        key, _, val = line.partition("=")
        val = val.strip()
        if len(val) >= 2 and val[0] == val[-1] and val[0] in "\"'":
            val = val[1:-1]
        unit.options[key.strip()] = Option(val, file, n)
    return prof


def merge(profiles: list[Profile]) -> Profile:
    """Merge profiles in load order (later overrides earlier), like tuned's merger."""
    out = Profile(" ".join(p.name for p in profiles), profiles[-1].file if profiles else "")
    for prof in profiles:
        for name, unit in prof.units.items():
            rep = unit.options.get("replace")
            replace = rep is not None and rep.value.strip().lower() in ("1", "true", "yes", "y")
            if replace or name not in out.units:
                out.units[name] = Unit(name, dict(unit.options))
            else:
                out.units[name].options.update(unit.options)
    return out
