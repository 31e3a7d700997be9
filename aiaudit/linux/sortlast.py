"""File names that sort after others: where a fix must write to win.

systemd-sysctl, systemd drop-ins (``foo.service.d/*.conf``), pam_limits' limits.d and sshd
``Include`` globs read the files of a directory set in byte order of their names (strcmp,
``LC_COLLATE=C``; systemd ``conf_files_list``, glibc ``glob`` under the C locale), and for
a key set in several files the last file read wins (sshd: the first).  A fix that writes a
drop-in named ``zz-...`` wins only if no file sorts after it; :func:`name_after` picks a
name that does.
"""

from __future__ import annotations

from typing import Iterable

MAX_NAME = 255
"""``NAME_MAX`` on Linux file systems."""


def key(name: str) -> bytes:
    """The byte-order sort key of a file name (undecodable bytes kept as they were)."""
    return name.encode("utf-8", "surrogateescape")


def name_after(existing: Iterable[str], preferred: str) -> str:
    """``preferred`` when it sorts after every name of ``existing`` (a name equal to it
    is the same file, which the fix replaces or extends, and counts as before it);
    otherwise ``preferred`` with ``z`` prefixed until it does; for a directory whose last
    name starts beyond ``z`` (``~site.conf``), that name's stem followed by ``z-`` and
    ``preferred``.  The suffix (``.conf``) is kept."""
    others = [key(n) for n in existing if n != preferred]
    if not others:
        return preferred
    last = max(others)
    name = preferred
    for _ in range(8):
        if key(name) > last:
            return name
        name = "z" + name
    stem = last.decode("utf-8", "surrogateescape")
    stem = stem[:stem.rfind(".")] if "." in stem else stem
    name = f"{stem}z-{preferred}"
    # a last name of ~250 bytes leaves no room: keep the preferred name (it then loses,
    # and the caller's evidence names the file that sorts after it)
    return name if len(key(name)) <= MAX_NAME else preferred
