"""Fleet reports as JSON documents, one at a time, from files and stdin.

A source is read as a sequence of JSON documents: a saved report (one pretty-printed
document), a JSON-lines file or stream of reports or events, or several reports
concatenated (``cat *.json``).  A new document starts at a line whose first character is
``{``: the JSON reporter indents everything inside its document, so that line is always the
start of the next one, and a truncated document costs only itself (its error names the file
and line), never the documents after it.

What a hostile source can cost is bounded (:mod:`aiaudit.fleet.bounds`): a document longer
than ``MAX_DOCUMENT`` bytes is skipped as it is read, never held whole (lines are read in
``CHUNK`` pieces); one whose decoded objects would pass ``MAX_DECODED`` is refused before it
is decoded; a stretch of more than ``MAX_SKIP`` characters without a document start ends
the source, and so do ``MAX_BAD_DOCUMENTS`` unusable documents
(:func:`aiaudit.fleet.collect.reduce_source` counts them).  Every refusal is one problem
line naming the file and line; the other sources are still read.

Decoding is ``json.loads`` (through :mod:`~aiaudit.fleet.skim`, which leaves out the rules
section and gives exactly ``json.loads``'s answer): an integer too long for ``int()`` (4,300
digits), nesting past the recursion limit, or a lone surrogate are problem lines, never an
exception.  Deep nesting needs no walk of its own: the fleet reads only known fields and
never re-encodes a nested value whole (``extract._text`` caps it).
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import sys
from typing import IO, Iterable, Iterator

from aiaudit.core.startup.records import record
from aiaudit.fleet import bounds, skim
from aiaudit.fleet.sources import STDIN, SUFFIXES, InputProblem, expand_sources

__all__ = ["STDIN", "SUFFIXES", "Document", "InputProblem", "decode", "expand_sources",
           "read_documents", "read_source", "split", "split_stream", "split_text"]

_CHEAP = 1024 * 1024
"""Below this many characters a document decodes to at most 25 MB: no estimate needed."""
_LONG_INT = re.compile(r"\d{4301}")
_NOT_AN_OBJECT = "not a JSON object (a report or event starts with '{' at the start of a line)"


@record
class Document:
    """One decoded JSON document and where it was read (``file`` or ``file:line``)."""

    origin: str
    data: object


def _too_big(text: str) -> str | None:
    """Why ``text`` must not be decoded, or ``None``."""
    if len(text) <= _CHEAP:
        return None
    need = bounds.decoded_estimate(text)
    if need > bounds.MAX_DECODED:
        return (f"document would take about {need // 1048576} MB to decode (at most "
                f"{bounds.MAX_DECODED // 1048576} MB): skipped")
    return None


def decode(text: str, origin: str, line: int) -> Document | InputProblem:
    """One document's text decoded (``line``: where it starts in ``origin``)."""
    where = f"{origin}:{line}" if line > 1 else origin
    why = _too_big(text)
    if why is not None:
        return InputProblem(where, why)
    try:
        data = skim.loads(text)
    except json.JSONDecodeError as exc:
        return _syntax(exc, text, origin, line)
    except RecursionError:
        return InputProblem(where, "JSON nested too deeply")
    except ValueError as exc:  # int(): "Exceeds the limit (4300 digits)"
        return _long_integer(exc, text, origin, line)
    return Document(where, data)


def _syntax(exc: json.JSONDecodeError, text: str, origin: str, line: int) -> InputProblem:
    # a document cut short (a node died mid-write, a full disk) does not end with its
    # closing brace; anything else is a malformed document
    body = text.rstrip()
    what = "invalid JSON" if body.endswith("}") else "truncated JSON document"
    lineno, colno = exc.lineno, exc.colno
    if exc.pos >= len(body):  # the text ran out: name where it stops, not the blank after
        lineno = body.count("\n") + 1
        colno = len(body) - body.rfind("\n")
    return InputProblem(f"{origin}:{line + lineno - 1}", f"{what} (column {colno}: {exc.msg})")


def _long_integer(exc: ValueError, text: str, origin: str, line: int) -> InputProblem:
    m = _LONG_INT.search(text)
    if m is None:
        return InputProblem(f"{origin}:{line}", f"invalid JSON: {str(exc)[:100]}")
    at = m.start()
    lineno = text.count("\n", 0, at)
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    return InputProblem(f"{origin}:{line + lineno}", f"invalid JSON (column {col}: an integer "
                                                     f"of more than 4,300 digits)")


def _pieces(fh: IO[str]) -> Iterator[tuple[str, bool]]:
    """``(piece, ends_line)``: the stream's lines, a line longer than
    :data:`~aiaudit.fleet.bounds.CHUNK` in several pieces, so none is ever held whole."""
    while True:
        piece = fh.readline(bounds.CHUNK)
        if not piece:
            return
        yield piece, piece.endswith("\n")


class _Splitter:
    """The state of :func:`split`: the document being gathered and the skip counter."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.buf: list[str] = []
        self.size = 0
        self.start = 0
        self.skipped = 0
        self.skipping = False

    def take(self) -> tuple[str, int, str] | None:
        if not self.buf:
            return None
        text = "".join(self.buf)
        self.buf, self.size = [], 0
        return self.origin, self.start, text

    def add(self, piece: str, lineno: int) -> InputProblem | None:
        """Gather ``piece`` into the current document; a problem when it grows too big."""
        self.size += len(piece)
        if self.size > bounds.MAX_DOCUMENT:
            self.buf, self.size, self.skipping = [], 0, True
            return InputProblem(f"{self.origin}:{self.start}", f"document larger than "
                                f"{bounds.MAX_DOCUMENT} bytes: skipped")
        self.buf.append(piece)
        return None


def split(fh: IO[str], origin: str) -> Iterator[tuple[str, int, str] | InputProblem]:
    """Split a text stream into documents at lines that start with ``{``:
    ``(origin, first line, text)`` each, or a problem for what is not one.

    Not split: one loop over the stream's pieces whose branches are the cases of a line
    (document start, continuation, text outside any document, too long, too much skipped);
    the gathering itself is in :class:`_Splitter`."""
    s = _Splitter(origin)
    lineno = 0
    at_line_start = True
    for piece, ends in _pieces(fh):
        if at_line_start:
            lineno += 1
        starts = at_line_start and piece.startswith("{")
        at_line_start = ends
        if starts:
            done = s.take()
            if done is not None:
                yield done
            s.start, s.skipping, s.skipped = lineno, False, 0
        elif s.skipping or (not s.buf and not piece.strip()):
            s.skipped += len(piece)
            if s.skipped > bounds.MAX_SKIP:
                yield InputProblem(f"{origin}:{lineno}", f"no document starts in "
                                   f"{bounds.MAX_SKIP} characters: the rest is not read")
                return
            continue
        elif not s.buf:
            yield InputProblem(f"{origin}:{lineno}", _NOT_AN_OBJECT)
            s.skipping, s.skipped = True, len(piece)
            continue
        problem = s.add(piece, lineno)
        if problem is not None:
            yield problem
    done = s.take()
    if done is not None:
        yield done


def split_text(text: str, origin: str) -> Iterator[tuple[str, int, str] | InputProblem]:
    """:func:`split` of a text already in memory (a file of at most
    :data:`~aiaudit.fleet.bounds.MAX_DOCUMENT` bytes), with the same answer: each document
    is one slice of ``text``, never a copy through a stream (``io.StringIO`` holds four
    bytes a character)."""
    starts = [0] if text.startswith("{") else []
    at = text.find("\n{")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n{", at + 1)
    first = starts[0] if starts else len(text)
    pos, lineno = 0, 1
    while pos < first:  # before the first document: blank lines, or one problem
        end = text.find("\n", pos, first)
        end = first if end < 0 else end + 1
        if text[pos:end].strip():
            yield InputProblem(f"{origin}:{lineno}", _NOT_AN_OBJECT)
            break
        pos, lineno = end, lineno + 1
    if not starts:
        return
    lineno = text.count("\n", 0, first) + 1
    for a, b in zip(starts, [*starts[1:], len(text)], strict=True):
        yield origin, lineno, text[a:b]
        lineno += text.count("\n", a, b)


def _documents(fh: IO[str] | str, origin: str) -> Iterator[Document | InputProblem]:
    parts = split_text(fh, origin) if isinstance(fh, str) else split(fh, origin)
    for part in parts:
        yield part if isinstance(part, InputProblem) else decode(part[2], origin, part[1])


def _stdin(stdin: IO[str] | None) -> IO[str]:
    return stdin if stdin is not None else io.TextIOWrapper(
        sys.stdin.buffer, encoding="utf-8", errors="replace")


def split_stream(stdin: IO[str] | None = None) -> Iterator[tuple[str, int, str] | InputProblem]:
    """:func:`split` of stdin (or ``stdin``)."""
    return split(_stdin(stdin), "<stdin>")


def read_source(src: str, *, stdin: IO[str] | None = None
                ) -> Iterator[Document | InputProblem]:
    """Every document of one source (a file, or ``-``), with a problem for each unusable
    one.  A file is opened without blocking (a FIFO named as a report, or swapped in after
    the walk, must not hang the fleet) and read only when it is a regular file."""
    if src == STDIN:
        yield from _documents(_stdin(stdin), "<stdin>")
        return
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        yield InputProblem(src, f"cannot read: {exc.strerror}")
        return
    with open(fd, "rb", closefd=True) as fb:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                yield InputProblem(src, "not a regular file")
                return
            if st.st_size <= bounds.MAX_DOCUMENT:  # the common case: one saved report
                text = fb.read(bounds.MAX_DOCUMENT + 1).decode("utf-8")
                doc = _whole(text, src)
                yield from [doc] if doc is not None else _documents(text, src)
                return
            yield from _documents(io.TextIOWrapper(fb, encoding="utf-8"), src)
        except UnicodeDecodeError as exc:
            where = f" (byte {exc.start})" if st.st_size <= bounds.MAX_DOCUMENT else ""
            yield InputProblem(src, f"not UTF-8 text{where}")
        except OSError as exc:
            yield InputProblem(src, f"cannot read: {exc.strerror}")


def read_documents(sources: Iterable[str | InputProblem], *,
                   stdin: IO[str] | None = None) -> Iterator[Document | InputProblem]:
    """Every document of every source, in order, with a problem for each unusable one."""
    for src in sources:
        if isinstance(src, InputProblem):
            yield src
        else:
            yield from read_source(src, stdin=stdin)


def _whole(text: str, origin: str) -> Document | None:
    """The file as one document when it is exactly one (else ``None``: split it)."""
    if _too_big(text) is not None:
        return None
    try:
        data = skim.loads(text)
    except (ValueError, RecursionError):
        return None
    return Document(origin, data)
