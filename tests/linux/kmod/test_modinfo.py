"""``.modinfo`` from ELF kernel modules, plain and compressed."""

from __future__ import annotations

import gzip
import lzma
import os
import shutil
import struct
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.kmod import modinfo as elfmodinfo


def make_ko(version: str | None = "535.129.03", *, bits: int = 64, big: bool = False,
            extra: bytes = b"") -> bytes:
    """A minimal relocatable ELF with a ``.modinfo`` section, like a kernel module."""
    e = ">" if big else "<"
    info = b"license=NVIDIA\0" + (f"version={version}\0".encode() if version else b"") + \
        b"srcversion=ABCDEF\0alias=pci:v000010DEd*sv*sd*bc03sc02i00*\0"
    names = b"\0.modinfo\0.shstrtab\0.text\0"
    body = info + names + extra
    hdr = 64 if bits == 64 else 52
    off_info, off_names = hdr, hdr + len(info)
    shoff = hdr + len(body)
    shoff += (-shoff) % 8
    if bits == 64:
        ident = b"\x7fELF" + bytes([2, 2 if big else 1, 1]) + b"\0" * 9
        ehdr = ident + struct.pack(e + "HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0,
                                   64, 4, 2)
        sh = lambda n, t, o, s: struct.pack(e + "IIQQQQIIQQ", n, t, 0, 0, o, s, 0, 0, 1, 0)  # noqa: E731
    else:
        ident = b"\x7fELF" + bytes([1, 2 if big else 1, 1]) + b"\0" * 9
        ehdr = ident + struct.pack(e + "HHIIIIIHHHHHH", 1, 3, 1, 0, 0, shoff, 0, 52, 0, 0,
                                   40, 4, 2)
        sh = lambda n, t, o, s: struct.pack(e + "IIIIIIIIII", n, t, 0, 0, o, s, 0, 0, 1, 0)  # noqa: E731
    data = bytearray(ehdr + body)
    data += b"\0" * (shoff - len(data))
    data += sh(0, 0, 0, 0)
    data += sh(1, 1, off_info, len(info))
    data += sh(10, 3, off_names, len(names))
    data += sh(20, 8, 0, 4096)  # .text as NOBITS
    return bytes(data)


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("big", [False, True])
def test_modinfo_version(bits: int, big: bool) -> None:
    ko = make_ko("570.26", bits=bits, big=big)
    info = elfmodinfo.modinfo(ko)
    assert info["version"] == ["570.26"]
    assert info["license"] == ["NVIDIA"]
    assert elfmodinfo.module_version("nvidia.ko", ko) == "570.26"


def test_compressed_xz_and_gz() -> None:
    ko = make_ko("580.95.05")
    assert elfmodinfo.module_version("nvidia.ko.xz", lzma.compress(ko)) == "580.95.05"
    assert elfmodinfo.module_version("nvidia.ko.gz", gzip.compress(ko)) == "580.95.05"


def test_zstd_reports_unsupported_or_reads() -> None:
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        with pytest.raises(elfmodinfo.UnsupportedCompression, match="zstd"):
            elfmodinfo.module_version("nvidia.ko.zst", b"\x28\xb5\x2f\xfd" + b"x" * 20)
    else:  # pragma: no cover - Python >= 3.14
        data = zstd.compress(make_ko("550.54.14"))
        assert elfmodinfo.module_version("nvidia.ko.zst", data) == "550.54.14"


def test_decompression_is_capped() -> None:
    bomb = lzma.compress(b"\0" * 5_000_000)
    with pytest.raises(ParseError, match="more than"):
        elfmodinfo.decompress("x.ko.xz", bomb, cap=1_000_000)
    with pytest.raises(ParseError, match="more than"):
        elfmodinfo.decompress("x.ko.gz", gzip.compress(b"\0" * 5_000_000), cap=1_000_000)


def test_no_version_and_not_elf() -> None:
    assert elfmodinfo.module_version("nvidia.ko", make_ko(None)) is None
    with pytest.raises(ParseError, match="not an ELF"):
        elfmodinfo.modinfo(b"hello")
    with pytest.raises(ParseError):
        elfmodinfo.modinfo(make_ko()[:100])  # truncated: headers beyond the end
    with pytest.raises(ParseError, match="corrupt"):
        elfmodinfo.decompress("x.ko.xz", b"\xfd7zXZ\0garbage")


@pytest.mark.oracle
def test_oracle_modinfo(tmp_path) -> None:
    """kmod's ``modinfo -F version`` reads the same section from our synthetic module."""
    exe = shutil.which("modinfo") or shutil.which("/usr/sbin/modinfo") or \
        shutil.which("/sbin/modinfo")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("modinfo (apt package kmod) must be installed in CI")
        pytest.skip("modinfo (kmod) not installed")
    cases = [("nvidia.ko", make_ko("535.129.03")),
             ("nvidia32.ko", make_ko("470.223.02", bits=32)),
             ("nvidia.ko.xz", lzma.compress(make_ko("550.54.15"), check=lzma.CHECK_CRC32)),
             ]  # Debian's kmod is built without zlib, so .ko.gz has no oracle here
    for name, data in cases:
        p = tmp_path / name
        p.write_bytes(data)
        out = subprocess.run([exe, "-F", "version", str(p)], capture_output=True, text=True,
                             timeout=30)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == elfmodinfo.module_version(name, data)


@given(st.binary(max_size=512))
def test_any_bytes(data: bytes) -> None:
    for name in ("nvidia.ko", "nvidia.ko.xz", "nvidia.ko.gz", "nvidia.ko.zst"):
        try:
            elfmodinfo.module_version(name, data)
        except ParseError:
            pass


@given(st.binary(max_size=64), st.integers(0, 400))
def test_mutated_elf(noise: bytes, pos: int) -> None:
    ko = bytearray(make_ko())
    ko[pos:pos + len(noise)] = noise
    try:
        elfmodinfo.modinfo(bytes(ko))
    except ParseError:
        pass
