"""sysfs value formats: bracketed choices, CPU lists, sizes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.linux import sysfs


@pytest.mark.parametrize("text,active", [
    ("[none] mq-deadline kyber bfq\n", "none"),
    ("mq-deadline kyber bfq [none]", "none"),      # older kernels list none last
    ("none [mq-deadline] kyber bfq", "mq-deadline"),
    ("always [madvise] never", "madvise"),
    ("always defer defer+madvise [madvise] never", "madvise"),
    ("none", None),                                # bio-based: no elevator possible
])
def test_choice(text: str, active: str | None) -> None:
    assert sysfs.parse_choice(text).active == active


@pytest.mark.parametrize("text", ["", "[a] [b]", "[a b]", "a]"])
def test_choice_rejects(text: str) -> None:
    with pytest.raises(ParseError):
        sysfs.parse_choice(text)


@pytest.mark.parametrize("text,cpus", [
    ("0-3,8\n", [0, 1, 2, 3, 8]),
    ("0", [0]),
    ("", []),
    ("0-7:2/4", [0, 1, 4, 5]),
])
def test_cpulist(text: str, cpus: list[int]) -> None:
    assert sysfs.parse_cpulist(text) == cpus


def test_format_cpulist_is_compact() -> None:
    cpus = [*range(0, 32), *range(64, 96), 100]
    assert sysfs.format_cpulist(cpus) == "0-31,64-95,100"
    assert sysfs.format_cpulist([]) == ""


@given(st.sets(st.integers(0, 600), max_size=80))
def test_cpulist_round_trip(cpus: set[int]) -> None:
    assert sysfs.parse_cpulist(sysfs.format_cpulist(cpus)) == sorted(cpus)


@pytest.mark.parametrize("text,size", [
    ("16G", sysfs.Size(bytes=16 << 30)), ("24684084k", sysfs.Size(bytes=24684084 << 10)),
    ("50%", sysfs.Size(percent=50)), ("1048576", sysfs.Size(bytes=1048576)),
    ("64m", sysfs.Size(bytes=64 << 20)),
])
def test_size(text: str, size: sysfs.Size) -> None:
    assert sysfs.parse_size(text) == size


def test_size_resolve() -> None:
    assert sysfs.Size(percent=50).resolve(1000) == 500
    assert sysfs.Size(percent=50).resolve(None) is None
    assert str(sysfs.Size(bytes=16 << 30)) == "16G"


@given(st.text(max_size=60))
def test_never_crashes(text: str) -> None:
    for fn in (sysfs.parse_choice, sysfs.parse_cpulist, sysfs.parse_size):
        try:
            fn(text)
        except ParseError:
            pass


@given(st.one_of(st.binary(max_size=64), st.just(NotFound("x")), st.just(HostError("y"))))
def test_attr_never_raises(value) -> None:
    out = sysfs.attr(value)
    assert (out is None) == (not isinstance(value, bytes))
    assert out is None or out == out.strip()


def test_attr_strips_and_replaces() -> None:
    assert sysfs.attr(b" 1\n") == "1"
    assert sysfs.attr(b"\xff0\n") == "\ufffd0"
    assert sysfs.attr(NotFound("gone")) is None


@given(st.one_of(st.binary(max_size=16), st.just(b"1\n"), st.just(b"0\n"), st.just(b" 1 \n"),
                 st.just(b"1\x1c\n"), st.just(HostError("y"))),
       st.sampled_from(["1", "0", "n/a", "", "performance"]))
def test_attr_is_equals_attr(value, text) -> None:
    assert sysfs.attr_is(value, text) == (sysfs.attr(value) == text)


def test_a_size_with_thousands_of_digits_is_a_parse_error() -> None:
    import pytest

    from aiaudit.core.errors import ParseError
    from aiaudit.linux.sysfs import parse_size

    with pytest.raises(ParseError):
        parse_size("9" * 5000)
