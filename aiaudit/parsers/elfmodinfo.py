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

from aiaudit.errors import ParseError

DECOMPRESSED_CAP = 512 * 1024 * 1024
"""Largest decompressed module accepted (the proprietary nvidia.ko is under 100 MiB)."""


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


def sections(elf: bytes) -> dict[str, bytes]:
    """Section name -> contents of an ELF file (32/64-bit, either byte order)."""
    if len(elf) < 52 or elf[:4] != b"\x7fELF":
        raise ParseError("not an ELF file")
    cls, data = elf[4], elf[5]
    if cls not in (1, 2) or data not in (1, 2):
        raise ParseError("unknown ELF class or byte order")
    e = "<" if data == 1 else ">"
    try:
        if cls == 2:
            (shoff,) = struct.unpack_from(e + "Q", elf, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", elf, 0x3A)
            fmt, need = e + "IIQQQQ", 40
        else:
            (shoff,) = struct.unpack_from(e + "I", elf, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", elf, 0x2E)
            fmt, need = e + "IIIIII", 24
        if shentsize < need or shnum == 0 or shstrndx >= shnum:
            raise ParseError("ELF file without usable section headers")
        if shoff + shnum * shentsize > len(elf):
            raise ParseError("ELF section headers beyond the end of the file (truncated?)")
        heads = []
        for i in range(shnum):
            name, _typ, _flags, _addr, off, size = struct.unpack_from(fmt, elf,
                                                                      shoff + i * shentsize)
            heads.append((name, off, size, _typ))
    except struct.error as exc:
        raise ParseError(f"malformed ELF header: {exc}") from None
    _, stroff, strsize, _ = heads[shstrndx]
    strtab = elf[stroff:stroff + strsize]
    out: dict[str, bytes] = {}
    for name_off, off, size, typ in heads:
        end = strtab.find(b"\0", name_off)
        if name_off >= len(strtab) or end < 0:
            continue
        name = strtab[name_off:end].decode("latin-1")
        if typ == 8:  # SHT_NOBITS: no file contents
            out.setdefault(name, b"")
            continue
        if off + size > len(elf):
            raise ParseError(f"ELF section {name!r} beyond the end of the file")
        out.setdefault(name, elf[off:off + size])
    return out


def modinfo(elf: bytes) -> dict[str, list[str]]:
    """``key -> [values]`` from the ``.modinfo`` section (what ``modinfo -F key`` prints)."""
    sec = sections(elf).get(".modinfo")
    if sec is None:
        raise ParseError("no .modinfo section: not a kernel module")
    out: dict[str, list[str]] = {}
    for item in sec.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key:
            out.setdefault(key.decode("utf-8", "replace"), []).append(
                value.decode("utf-8", "replace"))
    return out


def module_version(name: str, data: bytes) -> str | None:
    """``modinfo -F version`` of a module file's bytes; ``None`` if it has none."""
    values = modinfo(decompress(name, data)).get("version")
    return values[0] if values else None
