"""Rootless podman: the subordinate ids a user needs (subuid(5), subgid(5)).

``/etc/subuid`` and ``/etc/subgid`` hold ``owner:first:count`` lines; the owner is a user
name or a uid, and a user may have several ranges (their counts add up).  Rootless podman
maps an image's users into them and needs 65536 ids of each kind (podman's rootless
tutorial).
"""

from __future__ import annotations

from aiaudit.core.host import Host

PODMAN = ("/usr/bin/podman", "/usr/local/bin/podman")
SUBIDS = 65536
"""Subordinate uids (and gids) rootless podman needs to map an image's users."""
SUBID_FILES = ("/etc/subuid", "/etc/subgid")


def podman_installed(host: Host) -> bool:
    """A podman binary in the root."""
    return any(host.is_file(p) for p in PODMAN)


def subid_total(text: str, name: str, uid: int) -> tuple[int, int | None]:
    """``(total subordinate ids of the user, line of its first entry)`` in a subuid/subgid
    file; lines that are not ``owner:first:count`` with decimal numbers (ASCII digits, as
    shadow's ``getulong`` reads them) are skipped."""
    total, first = 0, None
    for n, raw in enumerate(text.splitlines(), 1):
        parts = raw.strip().split(":")
        if len(parts) != 3 or not _number(parts[1]) or not _number(parts[2]):
            continue
        if parts[0] in (name, str(uid)):
            total += int(parts[2])
            first = first or n
    return total, first


def _number(word: str) -> bool:
    """ASCII decimal digits only (``str.isdigit`` also accepts ``²``, which ``int``
    refuses)."""
    return word.isascii() and word.isdigit()


def subids(host: Host, name: str, uid: int) -> dict[str, tuple[int, int | None]]:
    """:func:`subid_total` of each of :data:`SUBID_FILES` (a missing file: ``(0, None)``)."""
    return {f: subid_total(host.try_read_text(f) or "", name, uid) for f in SUBID_FILES}
