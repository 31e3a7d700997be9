"""``aiaudit.linux.packages.installed``: the lookups a scan makes in the dpkg database, each
equal to what
the full parse says (the index and the partial parses are only about cost)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.linux.packages import dpkg
from aiaudit.linux.packages import installed as packages
from tests.helpers import build_root

_LINE = st.sampled_from(["Package: a", "Package: b", "Package: ab", "Package:b",
                         "Status: install ok installed", "Status: deinstall ok config-files",
                         "Version: 1", "Architecture: amd64", " Package: b",
                         "Description: Package a", "Package : a", "#Package: b", " ", ""])


_COUNT = itertools.count()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dpkg")


def _host(base: Path, text: str | None) -> Host:
    files = {} if text is None else {"/var/lib/dpkg/status": text}
    return Host(str(build_root(base / str(next(_COUNT)), files)))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_LINE, max_size=5), max_size=6))
def test_lookups_agree_with_the_full_parse(base: Path, stanzas: list[list[str]]) -> None:
    text = "\n\n".join("\n".join(lines) for lines in stanzas)
    full = dpkg.parse_stanzas(dpkg.split_stanzas(text))
    host = _host(base, text)
    assert packages.dpkg_any_installed(host) == bool(full)
    assert packages.dpkg_names(host) >= set(full)
    indexed = _host(base, text)
    for name in ("a", "b", "ab", "x"):
        assert packages.dpkg_package(host, name) == full.get(name)
        assert packages.dpkg_package(indexed, name, indexed=True) == full.get(name)
    assert packages.dpkg_installed(host, ("a",)) == {n: f for n, f in full.items()
                                                     if n.startswith("a")}


def test_no_database(base: Path) -> None:
    host = _host(base, None)
    assert not packages.dpkg_any_installed(host)
    assert packages.dpkg_names(host) == set()
    assert packages.dpkg_package(host, "a") is None


def test_a_binary_database_is_a_parse_error_for_every_lookup(base: Path) -> None:
    host = _host(base, "Package: a\nStatus: install ok installed\n\x00")
    for lookup in (lambda: packages.dpkg_package(host, "a"),
                   lambda: packages.dpkg_installed(host, ("a",)),
                   lambda: packages.dpkg_any_installed(host)):
        with pytest.raises(ParseError):
            lookup()
    assert packages.dpkg_version(host, "a") is None
