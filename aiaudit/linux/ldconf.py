"""``ld.so.conf(5)`` as glibc's ldconfig reads it (``elf/ldconfig.c`` ``parse_conf``).

One directory per line; ``#`` starts a comment; ``include PATTERN...`` reads the files
matching each glob (relative patterns are relative to the including file's directory, and
matches are read in sorted order); ``hwcap`` lines are obsolete and ignored.
"""

from __future__ import annotations

from aiaudit.core.startup.records import record

DEFAULT_DIRS = (
    "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
    "/lib64", "/usr/lib64", "/lib", "/usr/lib",
)
"""Trusted directories ldconfig always adds after the configured ones (``SLIBDIR`` and
``LIBDIR``: ``/lib64``, ``/usr/lib64`` on 64-bit RPM distros, the multiarch directories on
Debian/Ubuntu, then ``/lib``, ``/usr/lib``)."""


@record
class Directive:
    """One meaningful line: a library directory or an include pattern."""

    kind: str
    """``dir`` or ``include``."""
    value: str
    line: int


def parse(text: str, path: str = "/etc/ld.so.conf") -> list[Directive]:
    """Directives of one ld.so.conf file, in order; include patterns made absolute."""
    base = path.rsplit("/", 1)[0] or "/"
    out: list[Directive] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 1)
        head, rest = parts[0], parts[1] if len(parts) > 1 else ""
        if head == "include" and rest.strip():
            for pat in rest.split():
                if not pat.startswith("/"):
                    pat = f"{base.rstrip('/')}/{pat}"
                out.append(Directive("include", pat, n))
            continue
        if head == "hwcap":
            continue
        d = line.rstrip("/") or "/"
        if d.startswith("/"):
            out.append(Directive("dir", d, n))
    return out
