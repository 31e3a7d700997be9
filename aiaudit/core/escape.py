# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Escaping for every output: XML characters, UTF-8 encodability, terminal and HTML safety.

Host values (file contents, names) reach reports; what was there stays visible, escaped, and
nothing in it is interpreted by a terminal, browser or XML parser."""

from __future__ import annotations

from aiaudit.core.startup import lazy_pattern

# XML 1.0 section 2.2 "Char": #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
# [#x10000-#x10FFFF].  Everything else (C0 controls, lone surrogates from undecodable file
# names, U+FFFE/U+FFFF) cannot appear in an XML document, not even as a character reference.
_XML_FORBIDDEN = lazy_pattern("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


_SURROGATES = lazy_pattern("[\ud800-\udfff]")


def xml_safe(text: object) -> str:
    """``text`` with every character XML 1.0 forbids replaced by ``\\xNN``/``\\uNNNN``.

    Hostile config files can put NUL, escape or form-feed characters into evidence values;
    escaping (rather than dropping) keeps what was there visible to the reader.
    """
    return _XML_FORBIDDEN().sub(lambda m: _escape_char(m.group()), str(text))


def _escape_char(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def text_safe(text: object) -> str:
    """``text`` encodable as UTF-8: lone surrogates (undecodable bytes in file names read
    with ``surrogateescape``) become U+FFFD.  Text without one (nearly every report) is
    returned as it is, found so by the encoder rather than a pattern compiled for it."""
    s = str(text)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES().sub("\ufffd", s)
    return s


# C0 controls except TAB and LF, DEL, C1 controls (U+0080-U+009F: 8-bit CSI/OSC on some
# terminals), lone surrogates, the bidirectional marks, overrides and isolates that reorder
# what a reader sees (CVE-2021-42574, "Trojan Source"; U+061C too), and the Unicode line and
# paragraph separators (a line break to editors, log viewers and JavaScript).
_TERMINAL_UNSAFE = lazy_pattern(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u2028-\u202e"
    "\u2066-\u2069]")


_TERMINAL_UNSAFE_NO_LF = lazy_pattern(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u2028-\u202e"
    "\u2066-\u2069]")


_ASCII_UNSAFE = lazy_pattern("[\x00-\x08\x0b-\x1f\x7f]")
_ASCII_UNSAFE_NO_LF = lazy_pattern("[\x00-\x08\x0a-\x1f\x7f]")
"""What :data:`_TERMINAL_UNSAFE` (and its variant) match in ASCII text."""


def human_safe(text: object, *, newlines: bool = False) -> str:
    """``text`` with every character that could drive a terminal escaped as ``\\xNN`` /
    ``\\uNNNN``: ESC (colour, retitle, clear-screen sequences), CR (overwrite a line), BEL,
    BS, NUL, DEL, C1 controls, bidi overrides, and lone surrogates.  Line feeds become
    ``\\n`` unless ``newlines`` (multi-line snippets keep them); TAB stays.

    Every value a host, a saved report or a plugin supplies goes through this before it
    reaches a human output (text or HTML), so what was there stays visible and nothing in it
    is interpreted by the terminal or browser.
    """
    s = str(text)
    if s.isascii():  # nearly every value: only C0 controls and DEL can be unsafe there
        if s.isprintable():
            return s
        pat = (_ASCII_UNSAFE if newlines else _ASCII_UNSAFE_NO_LF)()
    else:  # (the full pattern's ranges up to U+DFFF cost more to compile than most scans use)
        pat = (_TERMINAL_UNSAFE if newlines else _TERMINAL_UNSAFE_NO_LF)()
    return pat.sub(lambda m: "\\n" if m.group() == "\n" else _escape_char(m.group()), s)


def html_safe(text: object, *, block: bool = False) -> str:
    """``text`` for HTML text or a quoted attribute: control characters shown escaped
    (:func:`human_safe`), then ``& < > " '`` escaped; ``block`` keeps line feeds (``<pre>``)."""
    import html

    return html.escape(human_safe(text, newlines=block), quote=True)
