"""dpkg status database: full parse and the hinted parse a scan uses."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.packages import dpkg

STATUS = """Package: procps
Status: install ok installed
Version: 2:4.0.2-3
Depends: libc6

Package: libprocps8
Status: deinstall ok config-files
Version: 2:3.3.17-5

Package: procps
Status: install ok installed
Version: 9:9
<SP>
Package: nvidia-driver
Status: install ok installed
Version: 535.1-1
Description: x
 Package: fake
""".replace("<SP>", " ")  # a whitespace-only line separates stanzas too


def _restricted(got: dict, hints: tuple[str, ...]) -> dict:
    return {n: f for n, f in got.items() if any(h in n for h in hints)}


def test_parse_status_and_hints() -> None:
    full = dpkg.parse_status(STATUS)
    assert sorted(full) == ["nvidia-driver", "procps"]
    assert full["procps"]["Version"] == "2:4.0.2-3"  # first of duplicates wins
    assert dpkg.parse_status(STATUS, ("procps",)) == {"procps": full["procps"]}
    assert dpkg.parse_status(STATUS, ("nvidia", "cuda")) == {
        "nvidia-driver": full["nvidia-driver"]}
    assert "fake" not in dpkg.parse_status(STATUS, ("fake",))  # a continuation line
    with pytest.raises(ParseError):
        dpkg.parse_status("Package: a\x00")


_LINE = st.sampled_from(["Package: a", "Package: ab", "Package:b ", "Status: x installed",
                         "Status: deinstall", "Version: 1", " Package: b", "#Package: a",
                         "", " ", "Package : a", "a:b:c", "\x85Package: b"])


@given(st.lists(_LINE, max_size=14), st.sampled_from([("a",), ("b",), ("ab", "b"), ("x",)]))
def test_hints_find_what_the_full_parse_finds(lines: list[str], hints: tuple[str, ...]) -> None:
    text = "\n".join(lines)
    assert _restricted(dpkg.parse_status(text, hints), hints) == \
        _restricted(dpkg.parse_status(text), hints)


@given(st.text(max_size=200))
def test_never_crashes(text: str) -> None:
    try:
        dpkg.parse_status(text, ("a",))
    except ParseError:
        pass


def test_this_hosts_database() -> None:
    path = "/var/lib/dpkg/status"
    if not os.path.isfile(path):
        if os.environ.get("CI"):
            pytest.fail("CI runs on Debian: /var/lib/dpkg/status must exist")
        pytest.skip("no dpkg database here")
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    full = dpkg.parse_status(text)
    assert full
    for name in sorted(full)[::7]:
        assert dpkg.parse_status(text, (name,))[name] == full[name]


_STANZA_LINE = st.sampled_from(["Package: a", "Package: ab", "Package:b ", "Package: b",
                                "Status: x installed", "Status: deinstall", "Version: 1",
                                " Package: b", "#Package: a", "Package : a", "Package:\ta",
                                "Description: a Package b", "X-Package: b", "\x85Package: b",
                                "Package: a\x0bPackage: b", "Package: b\rStatus: installed",
                                "a:b:c", ""])


@given(st.lists(st.lists(_STANZA_LINE, max_size=6), max_size=8),
       st.sampled_from([("a",), ("b",), ("ab",), ("x",), ("",)]),
       st.sampled_from([(), ("a",), ("b", "ab"), ("x",)]))
def test_indexed_selection_finds_what_the_hinted_parse_finds(
        stanzas: list[list[str]], names: tuple[str, ...], prefixes: tuple[str, ...]) -> None:
    """What a scan asks the index for (one package by name; the packages starting with
    prefixes) is what the hinted parse over every stanza gives, duplicates and odd lines
    (continuations, comments, vertical tabs, a second ``Package``) included."""
    texts = ["\n".join(lines) for lines in stanzas]
    index = dpkg.index_stanzas(texts)
    name = names[0]
    assert dpkg.parse_stanzas(dpkg.select_stanzas(texts, index, names=names)).get(name) == \
        dpkg.parse_stanzas(texts, names).get(name)
    if prefixes:
        def starting(got: dict) -> dict:
            return {n: f for n, f in got.items() if n.startswith(prefixes)}
        assert starting(dpkg.parse_stanzas(dpkg.select_stanzas(texts, index,
                                                               prefixes=prefixes))) == \
            starting(dpkg.parse_stanzas(texts, prefixes))


def test_the_index_names_every_stanza_that_has_a_package() -> None:
    stanzas = dpkg.split_stanzas(STATUS)
    by_name, nameless = dpkg.index_stanzas(stanzas)
    # nvidia-driver has "Package" in a continuation line: named by parsing its stanza
    assert by_name == {"procps": [0, 2], "libprocps8": [1], "nvidia-driver": [3]}
    assert nameless == []
    assert dpkg.index_stanzas(["Status: install ok installed", "Package: a"]) == \
        ({"a": [1]}, [0])


_CHUNK = st.sampled_from(["Package: a", "Package: ab", "b", "a", "\n", "\n", "\n", " ", "\t",
                          "\r", "\x0b", "\u2028", "\x85", "\xa0", "x: a b", " a"])


@given(st.lists(_CHUNK, max_size=30).map("".join),
       st.sampled_from([("a",), ("b",), ("ab", "b"), ("x",), ("a b",), ("",)]))
def test_stanzas_around_a_hint_are_those_of_the_split(text: str, hints: tuple[str, ...]) -> None:
    """Every stanza that contains a hint, found from the hint outwards, is the stanza the
    full split gives, blank lines of any whitespace and text edges included."""
    want = [s for s in dpkg.split_stanzas(text) if any(h in s for h in hints)]
    assert dpkg.stanzas_containing(text, hints) == want
    few = dpkg.stanzas_containing(text, hints, max_hits=2)
    assert few is None or few == want
