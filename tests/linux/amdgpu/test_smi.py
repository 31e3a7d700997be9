"""``amd-smi static --ras --bus --json`` (tests/fixtures/amd/amd-smi: a transcription of a
real MI350X output) and the command's guard rails."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.linux.amdgpu import smi
from tests.helpers import FIXTURES

MI350X = (FIXTURES / "amd" / "amd-smi" / "mi350x-static-ras.json").read_text()


def test_transcribed_mi350x_output() -> None:
    [g] = smi.parse_static(MI350X)
    assert g == smi.SmiRas(0, "0000:05:00.0", None, None)  # N/A threshold on that driver


def test_list_shape_warnings_and_values() -> None:
    doc = [{"gpu": 0, "bus": {"bdf": "0000:05:00.0"},
            "ras": {"bad_page_threshold": 128, "bad_page_threshold_exceeded": "True"}},
           {"gpu": 1, "bus": {"bdf": "0000:27:00.0"},
            "ras": {"bad_page_threshold": 128, "bad_page_threshold_exceeded": "False"}},
           {"gpu": 2, "ras": "N/A"}]
    got = smi.parse_static("WARNING: User is missing the following required groups: render\n"
                           + json.dumps(doc))
    assert [(g.bdf, g.threshold, g.exceeded) for g in got] == [
        ("0000:05:00.0", 128, True), ("0000:27:00.0", 128, False), (None, None, None)]


@pytest.mark.parametrize("text", ["", "no json here", "{\"gpu_data\": 3}", "[{\"gpu\": \"0\"}]",
                                  "[1, 2]", "{bad json"])
def test_other_output_is_refused(text: str) -> None:
    with pytest.raises(ParseError):
        smi.parse_static(text)


def test_never_runs_for_another_root(tmp_path) -> None:
    got = smi.query(Host(str(tmp_path), live=True), 5)
    assert isinstance(got, str) and "real /" in got


@given(st.text(max_size=200))
def test_parser_returns_or_raises(text: str) -> None:
    try:
        smi.parse_static(text)
    except ParseError:
        pass
