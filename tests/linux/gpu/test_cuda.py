"""CUDA toolkit versions and the shipped minimum-driver tables."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.gpu import cuda


def _table_doc() -> dict:
    text = resources.files("aiaudit.checks").joinpath("data/cuda_drivers.json").read_text()
    return json.loads(text)


def test_version_json() -> None:
    v = cuda.parse_version_json('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, '
                                '"cuda_cudart": {"version": "12.4.127"}}')
    assert (v.major, v.minor, v.update, v.text) == (12, 4, 1, "12.4.1")


def test_version_json_date_suffixed() -> None:
    v = cuda.parse_version_json('{"cuda": {"name": "CUDA SDK", "version": "11.8.20220929"}}')
    assert (v.major, v.minor, v.update, v.text) == (11, 8, None, "11.8")
    v = cuda.parse_version_json('{"cuda": {"version": "12.6.20241114"}}')
    assert v.text == "12.6"


def test_version_json_component_fallback() -> None:
    v = cuda.parse_version_json('{"cuda_cudart": {"version": "12.4.127"}}')
    assert (v.major, v.minor, v.update) == (12, 4, None)  # 127 is a build, not an update
    for bad in ("[]", "{", '{"x": 1}', '{"cuda": {"version": "twelve"}}'):
        with pytest.raises(ParseError):
            cuda.parse_version_json(bad)


def test_version_txt() -> None:
    v = cuda.parse_version_txt("CUDA Version 10.2.89\n")
    assert (v.major, v.minor, v.update) == (10, 2, None)
    with pytest.raises(ParseError):
        cuda.parse_version_txt("nothing\n")


def test_shipped_table_is_well_formed_and_monotonic() -> None:
    doc = _table_doc()
    table = cuda.parse_driver_table(doc)
    assert table.read == doc["read"]
    assert all(u.startswith("https://docs.nvidia.com/") for u in table.source.values())
    majors = [r.cuda_major for r in table.minor_compat]
    assert majors == sorted(majors) and {11, 12, 13} <= set(majors)
    rows = [r.cuda for r in table.toolkits]
    assert rows == sorted(rows, key=lambda v: (*v, 0, 0)[:3])


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d["toolkit_driver"].reverse(), "not after"),
    (lambda d: d["toolkit_driver"][-1].update(min_driver="400.1"), "lower"),
    (lambda d: d.update(read="yesterday"), "not a date"),
    (lambda d: d["minor_version_compat"][0].pop("min_driver"), "malformed"),
    (lambda d: d["toolkit_driver"][0].update(cuda="12.x"), "numeric"),
])
def test_broken_table_rejected(mutate, match: str) -> None:
    doc = _table_doc()
    mutate(doc)
    with pytest.raises(ParseError, match=match):
        cuda.parse_driver_table(doc)


def test_table_lookups() -> None:
    t = cuda.parse_driver_table(_table_doc())
    v = cuda.cuda_version
    # Table 2: one minimum per major
    assert t.required(v("12.9"), full=False)[0] == "525.60.13"
    assert t.required(v("11.8"), full=False)[0] == "450.80.02"
    assert t.required(v("13.0"), full=False)[0] == "580"
    # Table 3: exact update, else the newest row at or below within the minor
    assert t.required(v("12.4.1"), full=True)[0] == "550.54.15"
    assert t.required(v("12.4.0"), full=True)[0] == "550.54.14"
    assert t.required(v("12.6.2"), full=True)[0] == "560.35.03"
    assert t.required(v("12.1"), full=True)[0] == "530.30.02"   # update unknown: lowest
    assert t.required(v("11.4.4"), full=True)[0] == "470.82.01"
    # CUDA 10 has no minor-version compatibility: Table 3 decides both rules
    assert t.required(cuda.parse_version_txt("CUDA Version 10.2.89"), full=False)[0] == "440.33"
    assert t.required(v("14.0"), full=False) is None
    assert t.required(v("12.7"), full=True) is None   # there was no 12.7 release


def test_driver_ge() -> None:
    assert cuda.driver_ge("580.95.05", "580")
    assert cuda.driver_ge("535.129.03", "525.60.13")
    assert not cuda.driver_ge("470.223.02", "525.60.13")
    assert cuda.driver_ge("570.26", "570.26")
    assert not cuda.driver_ge("570.26", "570.124.06")


@given(st.text(max_size=200))
def test_any_text(text: str) -> None:
    for fn in (cuda.parse_version_json, cuda.parse_version_txt, cuda.cuda_version):
        try:
            fn(text)
        except ParseError:
            pass


@given(st.recursive(st.none() | st.integers() | st.text(max_size=8),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c,
                                                                         max_size=3),
                    max_leaves=12))
def test_any_table(doc) -> None:
    try:
        cuda.parse_driver_table(doc)
    except ParseError:
        pass


def test_a_version_with_thousands_of_digits_is_a_parse_error() -> None:
    """int() refuses strings over 4,300 digits with ValueError: the pattern stops them first."""
    import pytest

    from aiaudit.core.errors import ParseError
    from aiaudit.linux.gpu import cuda as cuda_mod

    for text in ("1" * 5000, "12." + "0" * 5000, "1" * 19):
        with pytest.raises(ParseError):
            cuda_mod.vtuple(text)
    assert cuda_mod.vtuple("11.8.20220929") == (11, 8, 20220929)
