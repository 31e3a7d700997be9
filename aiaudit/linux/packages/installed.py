"""Installed packages of the scanned root (dpkg status database), read once per run."""

from __future__ import annotations

from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.packages import dpkg

DPKG_STATUS = "/var/lib/dpkg/status"

MAX_WALKS = 64
"""Most occurrences of a looked-up name that are each walked out to their stanza; more
take the database index (one split and pass, about 20 M instructions for 864 packages)."""


def _text(host: Host) -> str:
    """The status file (memoized); ``""`` without a dpkg database."""

    def load() -> str:
        try:
            text = host.read_text(DPKG_STATUS, cap=64 * 1024 * 1024)
        except NotFound:
            return ""
        if "\x00" in text:  # checked once here: dpkg.stanzas_containing does not
            raise ParseError("binary content in dpkg status")
        return text

    return host.memo(("dpkg-text",), load)


def _stanzas(host: Host) -> list[str]:
    """Stanzas of the status file (memoized); ``[]`` without a dpkg database."""

    def load() -> list[str]:
        text = _text(host)
        return dpkg.split_stanzas(text) if text else []

    return host.memo(("dpkg-stanzas",), load)


def _selected(host: Host, names: tuple[str, ...] = (), prefixes: tuple[str, ...] = (),
              indexed: bool = False) -> list[str]:
    """The stanzas that may describe these packages: with ``indexed``, from the database
    split and indexed once per run (:func:`dpkg.select_stanzas`: for callers that look up
    many packages), else the stanzas that contain a name or prefix, found around its
    occurrences while they are at most ``MAX_WALKS`` (:func:`dpkg.stanzas_containing`: a
    few lookups of rare names never split the database).
    Both give :func:`dpkg.parse_stanzas` what the full parse finds for these packages."""
    hints = names + prefixes
    if not indexed:
        text = _text(host)
        if not text:
            return []
        # a name that occurs in many stanzas (libc6: 568 of 864) costs a walk each: the
        # index is cheaper then
        found = dpkg.stanzas_containing(text, hints, MAX_WALKS)
        if found is not None:
            return found
    stanzas = _stanzas(host)
    index = host.memo(("dpkg-index",), lambda: dpkg.index_stanzas(stanzas))
    return dpkg.select_stanzas(stanzas, index, names, prefixes)


def dpkg_installed(host: Host, prefixes: tuple[str, ...] = ()) -> dict[str, dict[str, str]]:
    """``{package: {field: value}}`` for installed packages (those whose name starts with
    one of ``prefixes`` when given: only stanzas naming them are parsed); empty when the
    root has no dpkg database (RPM distros, minimal images).  An unreadable or binary
    database raises :class:`~aiaudit.core.errors.HostError` /
    :class:`~aiaudit.core.errors.ParseError`."""

    def load() -> dict[str, dict[str, str]]:
        if not prefixes:
            return dpkg.parse_stanzas(_stanzas(host))
        got = dpkg.parse_stanzas(_selected(host, prefixes=prefixes))
        return {n: f for n, f in got.items() if n.startswith(prefixes)}

    return host.memo(("dpkg-status", prefixes), load)


def dpkg_any_installed(host: Host) -> bool:
    """Whether the dpkg database lists at least one installed package (``dpkg_installed``
    non-empty), parsing stanzas only until the first installed one; errors as
    :func:`dpkg_installed`."""
    return any(dpkg.parse_stanzas([stanza]) for stanza in _stanzas(host))


def dpkg_names(host: Host) -> set[str]:
    """Every name an installed package may have: a superset of ``set(dpkg_installed(host))``
    (also names whose stanzas are not installed), from the database index.  With
    :func:`dpkg_package` for the names that matter, a rule that compares installed packages
    with a list (the security suites) parses a few stanzas instead of the whole database
    (51 M instructions for 864 packages)."""
    stanzas = _stanzas(host)
    return set(host.memo(("dpkg-index",), lambda: dpkg.index_stanzas(stanzas))[0])


def dpkg_package(host: Host, package: str, *, indexed: bool = False) -> dict[str, str] | None:
    """Fields of one installed package, or ``None``; errors as :func:`dpkg_installed`.
    ``indexed``: through the database index (see :func:`_selected`), for a caller that
    looks up many packages."""
    return host.memo(("dpkg-package", package), lambda: dpkg.parse_stanzas(
        _selected(host, names=(package,), indexed=indexed)).get(package))


def dpkg_version(host: Host, package: str) -> str | None:
    """Full Debian version of an installed package, or ``None`` (not installed, no dpkg
    database, or the database cannot be read)."""
    try:
        info = dpkg_package(host, package)
    except (HostError, ParseError):
        return None
    return info.get("Version") if info else None
