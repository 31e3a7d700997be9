"""Where fleet reports come from: files, directories, globs and stdin, one document at a time.

A source is read as a sequence of JSON documents: a saved report (one pretty-printed
document), a JSON-lines file or stream of reports or events, or several reports
concatenated (``cat *.json``).  A new document starts at a line whose first character is
``{``: the JSON reporter indents everything inside its document, so that line is always the
start of the next one, and a truncated document costs only itself (its error names the file
and line), never the documents after it.

Nothing is held beyond the document being read; a document larger than
:data:`MAX_DOCUMENT` is refused (and skipped) rather than buffered.  Deep nesting needs no
walk of its own (``aiaudit render`` walks a report before validating it recursively): the
fleet reads only known fields, ``json`` refuses nesting past the recursion limit
(:class:`RecursionError`, one problem line) and a deeply nested ``actual`` is not
re-encoded.  The walk cost half the time of reading 10,000 reports.
"""

from __future__ import annotations

import glob
import io
import json
import os
import stat
import sys
from typing import IO, Iterable, Iterator

from aiaudit.core.startup.records import record
from aiaudit.fleet import skim

MAX_DOCUMENT = 64 * 1024 * 1024
"""Largest single document (report or event) accepted: a full report is ~150 KB."""
SUFFIXES = (".json", ".jsonl", ".ndjson")
"""Files taken from a directory (recursively, in name order)."""
STDIN = "-"


@record
class Document:
    """One decoded JSON document and where it was read (``file`` or ``file:line``)."""

    origin: str
    data: object


@record
class InputProblem:
    """A source or document that could not be used: one line for the user."""

    origin: str
    message: str

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}"


def expand_sources(args: Iterable[str]) -> Iterator[str | InputProblem]:
    """The files (or ``-``) named by ``args``: files as given, directories walked for
    :data:`SUFFIXES`, other words as globs; a word that names nothing is a problem."""
    for arg in args:
        if arg == STDIN:
            yield arg
        elif os.path.isdir(arg):
            found = False
            for folder, dirs, files in os.walk(arg):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(SUFFIXES) and not name.startswith("."):
                        found = True
                        yield os.path.join(folder, name)
            if not found:
                yield InputProblem(arg, "directory holds no .json/.jsonl report")
        elif os.path.lexists(arg):
            yield arg
        else:
            matches = sorted(glob.glob(arg, recursive=True))
            if not matches:
                yield InputProblem(arg, "no such file (and no file matches it as a glob)")
            for m in matches:
                if os.path.isdir(m):
                    yield from expand_sources([m])
                else:
                    yield m


def decode(text: str, origin: str, line: int) -> Document | InputProblem:
    """One document's text decoded (``line``: where it starts in ``origin``)."""
    where = f"{origin}:{line}" if line > 1 else origin
    try:
        data = skim.loads(text)
    except json.JSONDecodeError as exc:
        # a document cut short (a node died mid-write, a full disk) does not end with its
        # closing brace; anything else is a malformed document
        body = text.rstrip()
        what = "invalid JSON" if body.endswith("}") else "truncated JSON document"
        lineno, colno = exc.lineno, exc.colno
        if exc.pos >= len(body):  # the text ran out: name where it stops, not the blank after
            lineno = body.count("\n") + 1
            colno = len(body) - body.rfind("\n")
        return InputProblem(f"{origin}:{line + lineno - 1}",
                            f"{what} (column {colno}: {exc.msg})")
    except RecursionError:
        return InputProblem(where, "JSON nested too deeply")
    return Document(where, data)


def _lines(fh: IO[str]) -> Iterator[tuple[str, bool]]:
    """``(line, whole)``: lines of at most :data:`MAX_DOCUMENT` characters; a longer line
    comes as pieces with ``whole`` false, so no line is ever held in full."""
    while True:
        line = fh.readline(MAX_DOCUMENT + 1)
        if not line:
            return
        yield line, len(line) <= MAX_DOCUMENT or line.endswith("\n")


def split(fh: IO[str], origin: str) -> Iterator[tuple[str, int, str] | InputProblem]:
    """Split a text stream into documents at lines that start with ``{``:
    ``(origin, first line, text)`` each, or a problem for what is not one."""
    buf: list[str] = []
    size = 0
    start = 0
    lineno = 0
    skipping = False
    continued = False  # the previous piece was not a whole line
    for line, whole in _lines(fh):
        if not continued:
            lineno += 1
        starts = not continued and line.startswith("{")
        continued = not whole
        if starts:
            if buf:
                yield origin, start, "".join(buf)
            buf, size, start, skipping = [], 0, lineno, False
        if skipping or (not buf and not line.strip()):
            continue
        if not buf and not starts:
            yield InputProblem(f"{origin}:{lineno}", "not a JSON object (a report or event "
                                                     "starts with '{' at the start of a line)")
            skipping = True
            continue
        size += len(line)
        if size > MAX_DOCUMENT:
            yield InputProblem(f"{origin}:{start}", f"document larger than {MAX_DOCUMENT} "
                                                    f"bytes: skipped")
            buf, skipping = [], True
            continue
        buf.append(line)
    if buf:
        yield origin, start, "".join(buf)


def _documents(fh: IO[str], origin: str) -> Iterator[Document | InputProblem]:
    for part in split(fh, origin):
        yield part if isinstance(part, InputProblem) else decode(part[2], origin, part[1])


def _stdin(stdin: IO[str] | None) -> IO[str]:
    return stdin if stdin is not None else io.TextIOWrapper(
        sys.stdin.buffer, encoding="utf-8", errors="replace")


def split_stream(stdin: IO[str] | None = None) -> Iterator[tuple[str, int, str] | InputProblem]:
    """:func:`split` of stdin (or ``stdin``)."""
    return split(_stdin(stdin), "<stdin>")


def read_documents(sources: Iterable[str | InputProblem], *,
                   stdin: IO[str] | None = None) -> Iterator[Document | InputProblem]:
    """Every document of every source, in order, with a problem for each unusable one."""
    for src in sources:
        if isinstance(src, InputProblem):
            yield src
            continue
        if src == STDIN:
            yield from _documents(_stdin(stdin), "<stdin>")
            continue
        try:
            st = os.stat(src)
            if not stat.S_ISREG(st.st_mode):
                yield InputProblem(src, "not a regular file")
                continue
            if st.st_size <= MAX_DOCUMENT:  # the common case: one saved report
                with open(src, "rb") as fb:
                    text = fb.read(MAX_DOCUMENT + 1).decode("utf-8")
                doc = _whole(text, src)
                yield from [doc] if doc is not None else _documents(io.StringIO(text), src)
                continue
            with open(src, encoding="utf-8", errors="strict") as fh:
                yield from _documents(fh, src)
        except UnicodeDecodeError as exc:
            yield InputProblem(src, f"not UTF-8 text (byte {exc.start})")
        except OSError as exc:
            yield InputProblem(src, f"cannot read: {exc.strerror}")


def _whole(text: str, origin: str) -> Document | None:
    """The file as one document when it is exactly one (else ``None``: split it)."""
    try:
        data = skim.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return Document(origin, data)
