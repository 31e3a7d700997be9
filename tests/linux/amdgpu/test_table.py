"""AMD's compatibility table (checks/data/amd_rocm.json) and the version helpers that read
it: the shipped file is well-formed, every row cites a source, and the lookups answer as
AMD's matrix says."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core import resources
from aiaudit.core.errors import ParseError
from aiaudit.linux.amdgpu import table as tb

DOC = json.loads(resources.read_text("aiaudit.checks", tb.DATA))


def test_shipped_table_parses_and_is_dated() -> None:
    t = tb.table()
    assert t.read and len(t.read) == 10
    assert t.kmd["6.4"] == ("6.1", "6.2", "6.3", "6.4")
    assert t.modules["6.12.12"] == "6.4" and t.modules["6.14.14"] == "30.10"
    assert t.instinct[0x74A1] == "Instinct MI300X"


def test_every_row_cites_a_known_source() -> None:
    for row in DOC["kmd_userspace"]:
        assert row["source"] in DOC["source"]
    for row in DOC["module_versions"]:
        assert row["url"].startswith("https://")
    for row in DOC["rocm_to_kmd"]:
        assert row["source"].startswith("https://")


def test_each_kmd_supports_its_own_release() -> None:
    """AMD's rows always list the KMD's own release (a driver supports its own ROCm)."""
    t = tb.table()
    for kmd, users in t.kmd.items():
        own = next((r for r, k in t.rocm_to_kmd.items() if k == kmd), kmd)
        assert own in users, (kmd, users)


@pytest.mark.parametrize(("version", "line"), [
    ("6.2.0", "6.2"), ("6.2.0-66", "6.2"), ("6.2.41133-dd7f95766", "6.2"), ("30.10.1", "30.10"),
    ("6.10.5", "6.10"), ("7", None), ("rocm", None), ("", None)])
def test_line(version: str, line: str | None) -> None:
    assert tb.line(version) == line


@pytest.mark.parametrize(("digits", "release"), [
    ("60404", "6.4.4"), ("50701", "5.7.1"), ("30100100", "30.10.1"), ("31200000", "31.20.0"),
    ("6040", None), ("604040", None), ("abcde", None)])
def test_release_of_suffix(digits: str, release: str | None) -> None:
    assert tb.release_of_suffix(digits) == release


def test_kmd_of_release_and_supports() -> None:
    t = tb.table()
    assert tb.kmd_of_release(t, "6.4.4") == "6.4"
    assert tb.kmd_of_release(t, "7.0.2") == "30.10"  # the ROCm 7.0 driver is 30.10
    assert tb.kmd_of_release(t, "30.30.3") == "30.30"
    assert tb.kmd_of_release(t, "4.5.2") is None  # older than the table
    assert tb.supports(t, "6.3", "6.4.1") is True
    assert tb.supports(t, "6.3", "5.7.31921-d1770ee1b") is False
    assert tb.supports(t, "30.10", "7.0.0") is True and tb.supports(t, "30.10", "7.1") is False
    assert tb.supports(t, "99.9", "6.4") is None


@pytest.mark.parametrize("breakage", [
    lambda d: d.pop("source"),
    lambda d: d["kmd_userspace"].append({"kmd": "6.x", "userspace": ["6.4"],
                                         "source": "kmd_userspace"}),
    lambda d: d["kmd_userspace"][0].update(source="nowhere"),
    lambda d: d["module_versions"].append({"module": "6.1.1", "kmd": "9.9", "url": "https://x"}),
    lambda d: d["module_versions"][0].update(url="ftp://x"),
    lambda d: d["rocm_to_kmd"].append({"rocm": "7.1", "kmd": "30.20", "source": "x"}),
    lambda d: d["instinct"].append({"device": "74a1", "name": "no 0x"}),
    lambda d: d.update(instinct={"device": "0x74a1"}),
])
def test_malformed_tables_are_refused(breakage) -> None:
    doc = copy.deepcopy(DOC)
    breakage(doc)
    with pytest.raises(ParseError, match=tb.DATA):
        tb.parse(doc)


@given(st.text(max_size=40))
def test_line_never_raises(text: str) -> None:
    got = tb.line(text)
    assert got is None or got.count(".") == 1
