"""RPM package headers as stored in ``/var/lib/rpm/rpmdb.sqlite`` (rpm >= 4.16).

Each row of the ``Packages`` table holds one header blob without the 8-byte header magic:
``il`` and ``dl`` (big-endian int32: index entry count, data size), ``il`` index entries of
16 bytes (tag, type, offset, count), then the data store (rpm ``lib/header.c``,
``headerImport``).  Only the string tags needed here are decoded: NAME (1000), VERSION
(1001), RELEASE (1002) and the int32 EPOCH (1003).
"""

from __future__ import annotations

import struct

from aiaudit.core.errors import ParseError

TAGS = {1000: "name", 1001: "version", 1002: "release", 1003: "epoch"}
_STRING, _INT32, _I18N = 6, 4, 9
MAX_ENTRIES = 65536


def parse_header(blob: bytes) -> dict[str, str]:
    """``{"name": ..., "version": ..., "release": ..., "epoch": ...}`` (present tags)."""
    if len(blob) < 8:
        raise ParseError("rpm header too short")
    il, dl = struct.unpack_from(">ii", blob, 0)
    if il < 1 or il > MAX_ENTRIES or dl < 0 or 8 + 16 * il + dl > len(blob):
        raise ParseError("rpm header sizes out of range")
    store = 8 + 16 * il
    out: dict[str, str] = {}
    for i in range(il):
        tag, typ, off, count = struct.unpack_from(">iiii", blob, 8 + 16 * i)
        key = TAGS.get(tag)
        if key is None or off < 0 or off >= dl:
            continue
        if typ in (_STRING, _I18N):
            end = blob.find(b"\0", store + off, store + dl)
            if end < 0:
                raise ParseError(f"unterminated string for rpm tag {tag}")
            out[key] = blob[store + off:end].decode("utf-8", "replace")
        elif typ == _INT32 and count >= 1 and off + 4 <= dl:
            out[key] = str(struct.unpack_from(">i", blob, store + off)[0])
    return out


def evr(fields: dict[str, str]) -> str:
    """``[epoch:]version-release`` as rpm prints it."""
    v = f"{fields.get('version', '')}-{fields.get('release', '')}"
    return f"{fields['epoch']}:{v}" if fields.get("epoch") not in (None, "0") else v
