"""Pending security updates from apt's lists (:mod:`aiaudit.linux.packages.security`):
list decompression within a cap, which candidates apply, the newest candidate wins."""

from __future__ import annotations

import bz2
import gzip

import pytest

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.linux.packages import security

SEC = ("deb.debian.org_debian-security_dists_bookworm-security_main_binary-amd64_Packages")
SEC_I386 = SEC.replace("amd64", "i386")


def status(*pkgs: tuple[str, str, str]) -> str:
    return "".join(f"Package: {p}\nStatus: install ok installed\nArchitecture: {a}\n"
                   f"Version: {v}\n\n" for p, v, a in pkgs)


def packages(*pkgs: tuple[str, str, str]) -> str:
    return "".join(f"Package: {p}\nArchitecture: {a}\nVersion: {v}\n\n" for p, v, a in pkgs)


@pytest.mark.parametrize(("suffix", "pack"), [("", bytes), (".gz", gzip.compress),
                                              (".bz2", bz2.compress)])
def test_decompress_by_suffix(suffix: str, pack) -> None:
    assert security.decompress(f"x_Packages{suffix}", pack(b"Package: a\n")) == b"Package: a\n"


def test_decompress_refuses_zstd_and_garbage() -> None:
    with pytest.raises(ParseError, match="zstd"):
        security.decompress("x_Packages.zst", b"")
    with pytest.raises(ParseError):
        security.decompress("x_Packages.xz", b"garbage")


def test_read_list_is_capped_and_refuses_binary(make_root, monkeypatch) -> None:
    monkeypatch.setattr(security, "LIST_CAP", 1000)
    root = make_root({f"{security.LISTS}/a.gz": gzip.compress(b"\n" * 5000),
                      f"{security.LISTS}/b": b"Package: a\x00\n"})
    host = Host(str(root))
    with pytest.raises(ParseError, match="decompressed"):
        security.read_list(host, f"{security.LISTS}/a.gz")
    with pytest.raises(ParseError, match="NUL"):
        security.read_list(host, f"{security.LISTS}/b")


@pytest.mark.parametrize(("arch", "installed", "applies"), [
    ("amd64", "amd64", True), ("all", "amd64", True), ("amd64", "all", True),
    ("i386", "amd64", False)])
def test_candidate_applies(arch: str, installed: str, applies: bool) -> None:
    assert security.candidate_applies(arch, installed) is applies


def test_pending_takes_the_newest_candidate_of_all_lists(make_root) -> None:
    root = make_root({
        "/var/lib/dpkg/status": status(("openssl", "3.0.11-1", "amd64"), ("bash", "5.2", "amd64"),
                                       ("tzdata", "2024a-0", "all")),
        f"{security.LISTS}/{SEC}": packages(("openssl", "3.0.11-2", "amd64"),
                                            ("bash", "5.2", "amd64"), ("gone", "1", "amd64"),
                                            ("tzdata", "2023a-0", "all")),
        f"{security.LISTS}/{SEC_I386}": packages(("openssl", "3.0.11-3", "all"),
                                                 ("bash", "a:b", "amd64"))})
    host = Host(str(root))
    assert sorted(security.package_lists(host)) == [SEC, SEC_I386]
    found = security.pending_updates(host, [SEC, SEC_I386])
    assert found.updates == {"openssl": ("3.0.11-1", "3.0.11-3", SEC_I386)}
    assert found.problems == [f"{security.LISTS}/{SEC_I386}: bad version 'a:b' "
                              "of bash"]
    assert found.newest > 0


def test_security_in_sources(make_root) -> None:
    assert security.security_in_sources(Host(str(make_root({})))) is None
    root = make_root({"/etc/apt/sources.list": "# deb http://security.debian.org/ x main\n",
                      "/etc/apt/sources.list.d/ubuntu.sources":
                          "Types: deb\nURIs: http://security.ubuntu.com/ubuntu\n"})
    assert security.security_in_sources(Host(str(root))) == \
        "etc/apt/sources.list.d/ubuntu.sources"
