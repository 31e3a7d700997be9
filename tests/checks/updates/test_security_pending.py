"""``updates.security_pending``: pending security updates from dpkg status and apt's
-security lists."""

from __future__ import annotations

import gzip
import lzma
import os
import time

import pytest

from aiaudit.core.model import Status
from tests.helpers import run_check

SEC = ("/var/lib/apt/lists/deb.debian.org_debian-security_dists_bookworm-security_main_"
       "binary-amd64_Packages")
MAIN = "/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages"


def status(*pkgs: tuple[str, str, str]) -> str:
    return "".join(f"Package: {p}\nStatus: install ok installed\nArchitecture: {a}\n"
                   f"Version: {v}\n\n" for p, v, a in pkgs)


def packages(*pkgs: tuple[str, str, str]) -> str:
    return "".join(f"Package: {p}\nArchitecture: {a}\nVersion: {v}\n\n" for p, v, a in pkgs)


def test_pending_and_not(make_root) -> None:
    st_ = status(("openssl", "3.0.11-1~deb12u1", "amd64"), ("tzdata", "2024a-0+deb12u1", "all"),
                 ("libc6", "2.36-9+deb12u4", "amd64"))
    lists = packages(("openssl", "3.0.11-1~deb12u2", "amd64"), ("tzdata", "2024a-0+deb12u1",
                                                                "all"),
                     ("libc6", "2.36-9+deb12u4", "i386"), ("unrelated", "9", "amd64"))
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": st_, SEC: lists, MAIN: packages(("openssl", "9.9", "amd64"))}))
    assert r.status is Status.FAIL
    assert set(r.data["pending"]) == {"openssl"}  # main suite and foreign arch do not count
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": st_, SEC: packages(("openssl", "3.0.11-1~deb12u1", "amd64"))}))
    assert r.status is Status.PASS


def test_compressed_lists(make_root) -> None:
    st_ = status(("bash", "5.2.15-2", "amd64"))
    body = packages(("bash", "5.2.15-2+b7", "amd64")).encode()
    import lz4.frame

    for suffix, data in ((".gz", gzip.compress(body)), (".xz", lzma.compress(body)),
                         (".lz4", lz4.frame.compress(body))):
        [r] = run_check("updates.security_pending", make_root(
            {"/var/lib/dpkg/status": st_, SEC + suffix: data}))
        assert r.status is Status.FAIL, suffix


def test_decompression_bomb_is_bounded(make_root, monkeypatch) -> None:
    from aiaudit.linux.packages import security

    monkeypatch.setattr(security, "LIST_CAP", 1 << 20)
    st_ = status(("bash", "5.2.15-2", "amd64"))
    bomb = gzip.compress(b"Package: x\n" + b"\n" * (8 << 20))
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": st_, SEC + ".gz": bomb}))
    assert r.status is Status.ERROR and "decompressed" in r.message


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2", ".lz4", ".zst"])
def test_corrupt_compressed_list_is_an_error(make_root, suffix: str) -> None:
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": status(("bash", "5", "amd64")), SEC + suffix: b"garbage"}))
    assert r.status is Status.ERROR


def test_stale_lists_and_missing_lists(make_root) -> None:
    st_ = status(("bash", "5.2.15-2", "amd64"))
    root = make_root({"/var/lib/dpkg/status": st_, SEC: packages(("bash", "5.2.15-2", "amd64"))})
    old = time.time() - 30 * 86400
    os.utime(root / SEC.lstrip("/"), (old, old))
    [r] = run_check("updates.security_pending", root)
    assert r.status is Status.FAIL and "days old" in r.message
    [r] = run_check("updates.security_pending", make_root({"/var/lib/dpkg/status": st_}))
    assert r.status is Status.SKIP
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": st_, MAIN: packages(("bash", "5.2.15-2", "amd64"))}))
    assert r.status is Status.FAIL and "does not even download" in r.message
    [r] = run_check("updates.security_pending", make_root(
        {"/var/lib/dpkg/status": st_, MAIN: packages(("bash", "5.2.15-2", "amd64")),
         "/etc/apt/sources.list.d/debian.sources": "Types: deb\nURIs: http://deb.debian.org/"
         "debian-security\nSuites: bookworm-security\n"}))
    assert r.status is Status.FAIL and "never downloaded" in r.message
