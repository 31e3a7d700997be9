"""``aiaudit.core.escape``: the fast paths (ASCII text, text without lone surrogates) give
what the full patterns give, on any text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core import escape

TEXT = st.one_of(st.text(), st.text(alphabet=st.characters(max_codepoint=0x7F)),
                 st.text(alphabet="\t\n\r\x1b\x7f\x85\u202e\ud800 aZ~"))


@settings(max_examples=400, deadline=None)
@given(TEXT, st.booleans())
def test_human_safe_is_the_full_pattern(text: str, newlines: bool) -> None:
    pat = (escape._TERMINAL_UNSAFE if newlines else escape._TERMINAL_UNSAFE_NO_LF)()
    full = pat.sub(lambda m: "\\n" if m.group() == "\n" else escape._escape_char(m.group()),
                   text)
    assert escape.human_safe(text, newlines=newlines) == full


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_text_safe_is_the_surrogate_pattern(text: str) -> None:
    assert escape.text_safe(text) == escape._SURROGATES().sub("\ufffd", text)
    escape.text_safe(text).encode("utf-8")  # always encodable
