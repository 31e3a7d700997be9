"""RPM header blobs (rpmdb.sqlite ``Packages.blob``)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.packages import rpm as rpmheader


def make_header(name: str, version: str, release: str, epoch: int | None = None) -> bytes:
    """A header blob as rpm stores it in the sqlite database (no magic)."""
    entries, store = [], b""
    for tag, val in ((1000, name), (1001, version), (1002, release)):
        entries.append(struct.pack(">iiii", tag, 6, len(store), 1))
        store += val.encode() + b"\0"
    entries.append(struct.pack(">iiii", 1004, 9, len(store), 1))  # SUMMARY, ignored
    store += b"summary\0"
    if epoch is not None:
        store += b"\0" * (-len(store) % 4)
        entries.append(struct.pack(">iiii", 1003, 4, len(store), 1))
        store += struct.pack(">i", epoch)
    return struct.pack(">ii", len(entries), len(store)) + b"".join(entries) + store


def test_parse_header() -> None:
    h = rpmheader.parse_header(make_header("kmod-nvidia-latest-dkms", "550.54.15", "1.el9", 3))
    assert h == {"name": "kmod-nvidia-latest-dkms", "version": "550.54.15",
                 "release": "1.el9", "epoch": "3"}
    assert rpmheader.evr(h) == "3:550.54.15-1.el9"
    assert rpmheader.evr(rpmheader.parse_header(make_header("a", "1", "2"))) == "1-2"


def test_bad_headers() -> None:
    for blob in (b"", b"\0\0\0\1", struct.pack(">ii", 1000000, 0), struct.pack(">ii", 1, 99)):
        with pytest.raises(ParseError):
            rpmheader.parse_header(blob)


@given(st.binary(max_size=300))
def test_any_bytes(blob: bytes) -> None:
    try:
        rpmheader.parse_header(blob)
    except ParseError:
        pass
