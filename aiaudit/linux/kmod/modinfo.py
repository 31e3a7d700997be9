"""Kernel module version info without ``modinfo``: the ELF ``.modinfo`` section.

A module's ``MODULE_VERSION()``/``MODULE_LICENSE()``... macros put ``key=value\\0`` strings
into the ``.modinfo`` section (``include/linux/moduleparam.h`` ``__MODULE_INFO``); kmod's
``modinfo -F version`` reads the same section.  Modules may be compressed (``.ko.xz``,
``.ko.gz``, ``.ko.zst``: kmod ``libkmod-file.c``); xz and gzip are decompressed here with the
standard library, zstd only where the interpreter has it (``compression.zstd``, Python 3.14).
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, Callable, Iterable, Iterator

from aiaudit.core.errors import ParseError, TooLarge
from aiaudit.core.host import Host

DECOMPRESSED_CAP = 512 * 1024 * 1024
"""Largest decompressed module accepted (the proprietary nvidia.ko is under 100 MiB)."""


SECTION_CAP = 16 * 1024 * 1024
"""Largest ``.modinfo`` or section-name table read from a module image (a real one is a
few KiB): a bigger one is a :class:`ParseError`, never a memory spike."""

TAIL = 1024 * 1024
"""Bytes of a decompressed module kept from its end while streaming it: the linker puts
the section headers and their name table there, so two passes usually suffice."""

OUT_CHUNK = 1024 * 1024
"""Decompressed bytes produced per step while streaming."""


class UnsupportedCompression(ParseError):
    """The module is compressed with a format this interpreter cannot decompress."""


def decompress(name: str, data: bytes, cap: int = DECOMPRESSED_CAP) -> bytes:
    """The ELF image of a module file named ``name`` (``.ko``, ``.ko.xz``, ``.ko.gz``,
    ``.ko.zst``), decompressed with at most ``cap`` bytes of output."""
    if name.endswith(".xz"):
        import lzma  # only for .ko.xz modules

        try:
            d = lzma.LZMADecompressor()
            out = d.decompress(data, max_length=cap)
        except (lzma.LZMAError, EOFError) as exc:
            raise ParseError(f"{name}: corrupt compressed module: {exc}") from None
        if not d.eof and len(out) >= cap:
            raise ParseError(f"{name}: decompresses to more than {cap} bytes")
        return out
    try:
        if name.endswith(".gz"):
            z = zlib.decompressobj(wbits=47)
            out = z.decompress(data, cap)
            if z.unconsumed_tail:
                raise ParseError(f"{name}: decompresses to more than {cap} bytes")
            return out
    except (zlib.error, EOFError) as exc:
        raise ParseError(f"{name}: corrupt compressed module: {exc}") from None
    if name.endswith(".zst"):
        try:
            from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14
        except ImportError:
            raise UnsupportedCompression(
                f"{name}: compressed with zstd, which this Python cannot decompress"
            ) from None
        try:
            dz = zstd.ZstdDecompressor()
            out = dz.decompress(data, max_length=cap)
        except Exception as exc:  # zstd.ZstdError and friends
            raise ParseError(f"{name}: corrupt compressed module: {exc}") from None
        return out
    return data


def modinfo(elf: bytes) -> dict[str, list[str]]:
    """``key -> [values]`` from the ``.modinfo`` section (what ``modinfo -F key`` prints)
    of an ELF image in memory (:func:`read_modinfo` over its bytes)."""
    return read_modinfo(lambda off, n: elf[off:off + n], lambda: len(elf))


def module_version(name: str, data: bytes) -> str | None:
    """``modinfo -F version`` of a module file's bytes; ``None`` if it has none."""
    values = modinfo(decompress(name, data)).get("version")
    return values[0] if values else None


# ------------------------------------------------------------------ bounded reading
ReadAt = Callable[[int, int], bytes]
"""``read_at(offset, size)``: at most ``size`` bytes of an image from ``offset``."""


def read_modinfo(read_at: ReadAt, size: Callable[[], int]) -> dict[str, list[str]]:
    """What :func:`modinfo` gives, reading only the ELF header, the section headers, the
    section-name table and ``.modinfo`` through ``read_at`` (``size()`` is the image's
    length, asked once the header is known to be ELF).  Memory is bounded by
    :data:`SECTION_CAP`, whatever the image's size."""
    head = read_at(0, 64)
    if len(head) < 52 or head[:4] != b"\x7fELF":
        raise ParseError("not an ELF file")
    cls, data = head[4], head[5]
    if cls not in (1, 2) or data not in (1, 2):
        raise ParseError("unknown ELF class or byte order")
    e = "<" if data == 1 else ">"
    try:
        if cls == 2:
            (shoff,) = struct.unpack_from(e + "Q", head, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", head, 0x3A)
            fmt, need = e + "IIQQQQ", 40
        else:
            (shoff,) = struct.unpack_from(e + "I", head, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", head, 0x2E)
            fmt, need = e + "IIIIII", 24
    except struct.error as exc:
        raise ParseError(f"malformed ELF header: {exc}") from None
    if shentsize < need or shnum == 0 or shstrndx >= shnum:
        raise ParseError("ELF file without usable section headers")
    total = size()
    if shoff + shnum * shentsize > total:
        raise ParseError("ELF section headers beyond the end of the file (truncated?)")
    table = read_at(shoff, shnum * shentsize)  # at most 65535 x 64 bytes
    if len(table) < shnum * shentsize:
        raise ParseError("ELF section headers beyond the end of the file (truncated?)")
    heads = [struct.unpack_from(fmt, table, i * shentsize) for i in range(shnum)]

    def section(off: int, length: int, what: str) -> bytes:
        if length > SECTION_CAP:
            raise ParseError(f"ELF {what} of {length} bytes, over the {SECTION_CAP}-byte "
                             "limit")
        if off + length > total:
            raise ParseError(f"ELF section {what} beyond the end of the file")
        got = read_at(off, length)
        if len(got) < length:
            raise ParseError(f"ELF section {what} beyond the end of the file")
        return got

    _, _, _, _, stroff, strsize = heads[shstrndx]
    strtab = section(stroff, strsize, "name table")
    for name_off, typ, _flags, _addr, off, length in heads:
        end = strtab.find(b"\0", name_off)
        if name_off >= len(strtab) or end < 0 or strtab[name_off:end] != b".modinfo":
            continue
        sec = b"" if typ == 8 else section(off, length, "'.modinfo'")
        return _modinfo_items(sec)
    raise ParseError("no .modinfo section: not a kernel module")


def _modinfo_items(sec: bytes) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in sec.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key:
            out.setdefault(key.decode("utf-8", "replace"), []).append(
                value.decode("utf-8", "replace"))
    return out


def inflate(name: str, chunks: Iterable[bytes], cap: int = DECOMPRESSED_CAP
            ) -> Iterator[bytes]:
    """The decompressed image of module file ``name`` from its compressed ``chunks``, as
    successive pieces of at most :data:`OUT_CHUNK` bytes; more than ``cap`` bytes in all
    is a :class:`ParseError`.  An uncompressed ``.ko`` passes through."""
    if not name.endswith((".xz", ".gz", ".zst")):
        yield from chunks
        return
    dec: Any
    errors: tuple[type[BaseException], ...]
    if name.endswith(".xz"):
        import lzma

        dec, errors = lzma.LZMADecompressor(), (lzma.LZMAError, EOFError)
    elif name.endswith(".gz"):
        dec, errors = zlib.decompressobj(wbits=47), (zlib.error, EOFError)
    else:
        try:
            # Python >= 3.14; whether mypy knows the module depends on its typeshed
            from compression import zstd  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise UnsupportedCompression(
                f"{name}: compressed with zstd, which this Python cannot decompress"
            ) from None
        dec, errors = zstd.ZstdDecompressor(), (Exception,)
    total = 0
    is_zlib = name.endswith(".gz")
    try:
        for data in chunks:
            while True:
                out = dec.decompress(data, OUT_CHUNK)
                total += len(out)
                if total > cap:
                    raise ParseError(f"{name}: decompresses to more than {cap} bytes")
                if out:
                    yield out
                if dec.eof:
                    return
                if is_zlib:
                    data = dec.unconsumed_tail
                    if not data:
                        break
                elif dec.needs_input:
                    break
                else:
                    data = b""
    except errors as exc:
        raise ParseError(f"{name}: corrupt compressed module: {exc}") from None


class StreamedImage:
    """``read_at`` over an image that can only be streamed from its start (a compressed
    module): each read that misses what is kept streams the image again, keeping the
    bytes asked for (and, on a full pass, the last :data:`TAIL` bytes and the length).
    :func:`read_modinfo` then costs at most four passes, of which only one goes to the
    end (the header, the name table and ``.modinfo`` passes stop once they have their
    bytes; the name table is usually in the tail), and a few MiB of memory."""

    def __init__(self, stream: Callable[[], Iterable[bytes]]) -> None:
        self._stream = stream
        self._kept: list[tuple[int, bytes]] = []
        self._size: int | None = None

    def size(self) -> int:
        """The image's length (one full pass the first time, keeping its tail)."""
        if self._size is None:
            self._pass(None)
        assert self._size is not None
        return self._size

    def read_at(self, offset: int, size: int) -> bytes:
        """At most ``size`` bytes from ``offset``."""
        for start, data in self._kept:
            if start <= offset and offset + size <= start + len(data):
                return data[offset - start:offset - start + size]
        if self._size is not None and offset + size > self._size:
            size = max(0, self._size - offset)
        return self._pass((offset, size))

    def _pass(self, want: tuple[int, int] | None) -> bytes:
        """Stream the image once: keep ``want`` (and stop once it is complete), or, with
        ``None``, go to the end, keeping the tail and the length."""
        pos = 0
        got = bytearray()
        tail = bytearray()
        for piece in self._stream():
            end = pos + len(piece)
            if want is not None:
                lo, hi = want[0], want[0] + want[1]
                if end > lo and pos < hi:
                    got += piece[max(0, lo - pos):min(len(piece), hi - pos)]
                if end >= hi:
                    break
            else:
                tail += piece
                if len(tail) > 2 * TAIL:
                    del tail[:len(tail) - TAIL]
            pos = end
        if want is None:
            self._size = pos
            self._kept.append((pos - len(tail), bytes(tail)))
            return b""
        data = bytes(got)
        self._kept.append((want[0], data))
        return data


MODULE_READ_CAP = 256 * 1024 * 1024
"""Largest module file read for its version (nvidia.ko is ~100 MiB with debug info)."""


def file_version(host: Host, path: str) -> str | None:
    """``modinfo -F version`` of module file ``path`` on the scanned root, reading only
    the parts of the ELF image it needs (an uncompressed module through
    ``Host.read_range``, a compressed one streamed through its decompressor): a few MiB
    of memory whatever the file's size.  A file over :data:`MODULE_READ_CAP` raises
    :class:`~aiaudit.core.errors.TooLarge`."""
    if not path.endswith((".xz", ".gz", ".zst")):
        size = host.stat(path).st_size
        if size > MODULE_READ_CAP:
            raise TooLarge(f"{path}: {size} bytes, over the {MODULE_READ_CAP}-byte read cap")
        info = read_modinfo(lambda off, n: host.read_range(path, off, n), lambda: size)
    else:
        image = StreamedImage(lambda: inflate(path, host.read_chunks(path,
                                                                     cap=MODULE_READ_CAP)))
        info = read_modinfo(image.read_at, image.size)
    values = info.get("version")
    return values[0] if values else None
