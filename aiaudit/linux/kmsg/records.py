# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""The ``/dev/kmsg`` record format (Documentation/ABI/testing/dev-kmsg).

A record is one line ``PRIO,SEQ,USEC,FLAGS[,...];MESSAGE`` followed by zero or more
continuation lines that start with a space (`` SUBSYSTEM=pci``, `` DEVICE=+pci:0000:3b:00.0``).
``PRIO`` is ``facility << 3 | level``, ``SEQ`` the record's 64-bit sequence number (it only
grows during a boot), ``USEC`` the time since boot in microseconds; the kernel escapes
non-printable bytes of the message (and any newline in it) as ``\\xNN``, so a record's
message is always one line.  A ``--live`` snapshot root carries the same text in
``dev/kmsg`` (``cat /dev/kmsg`` with a timeout, or ``dd iflag=nonblock``).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record


@record
class Header:
    """The fields before the ``;`` of a record."""

    level: int
    """Syslog level 0-7 (``PRIO & 7``: 3 = err, 4 = warning...)."""
    seq: int
    usec: int


def parse_header(line: bytes) -> tuple[Header, bytes] | None:
    """(header, message) of a record line; ``None`` when the line is not one (a
    continuation line, an empty line, text in another format)."""
    head, sep, text = line.partition(b";")
    if not sep:
        return None
    parts = head.split(b",", 4)
    if len(parts) < 4:
        return None
    try:
        prio, seq, usec = int(parts[0]), int(parts[1]), int(parts[2])
    except ValueError:
        return None
    if prio < 0 or seq < 0 or usec < 0:
        return None
    return Header(prio & 7, seq, usec), text


MAX_LINE = 65536
"""Longest line kept whole: a record is at most 8 KiB (``CONSOLE_EXT_LOG_MAX``), four times
that with every byte escaped.  A longer run without a newline (a hostile or broken file)
is dropped, so a block never grows past its chunk and this bound."""


def blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Blocks of whole lines (each ends with a newline but maybe the last) from a byte
    stream given as chunks; each byte is copied a bounded number of times."""
    rest = b""
    for chunk in chunks:
        if rest:
            chunk = rest + chunk
        cut = chunk.rfind(b"\n") + 1
        rest = chunk[cut:]
        if len(rest) > MAX_LINE:
            rest = b""
        if cut:
            yield chunk[:cut]
    if rest:
        yield rest


def count_records(block: bytes) -> int:
    """Record lines in a block of whole lines: lines that do not start with a space
    (continuation lines do; the kernel writes no empty line)."""
    n = block.count(b"\n") - block.count(b"\n ")
    if block and not block.endswith(b"\n"):
        n += 1
    if block[:1] == b" ":
        n -= 1
    return n


def check_format(first: bytes, where: str, line: int) -> None:
    """Raise :class:`ParseError` when ``first`` (the first line that is not empty or a
    continuation) is not a ``/dev/kmsg`` record: a ``dmesg`` text dump or a syslog file
    given as ``dev/kmsg`` would otherwise read as an empty, fault-free log."""
    if parse_header(first) is None:
        shown = first[:60].decode("utf-8", "replace")
        raise ParseError(f"not a /dev/kmsg record (PRIO,SEQ,USEC,FLAGS;MESSAGE): {shown!r}",
                         line=line, source=where)


def unescape(text: bytes) -> str:
    """A record's message as text: the kernel's ``\\xNN`` escapes undone only for display
    (matching is done on the escaped form, which is what the kernel wrote)."""
    s = text.decode("utf-8", "replace")
    if "\\x" not in s:
        return s
    import re

    return re.sub(r"\\x([0-9a-fA-F]{2})",
                  lambda m: chr(int(m.group(1), 16)) if int(m.group(1), 16) >= 0x20 else " ",
                  s)
