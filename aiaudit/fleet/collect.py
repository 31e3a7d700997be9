"""Read every source and aggregate: sources in, one :class:`~aiaudit.fleet.model.Fleet` out.

A document that cannot be used becomes one problem line naming it (file, line); the others
are still aggregated.  Each document is reduced as soon as it is decoded and then dropped.
A source that keeps giving unusable documents (``yes '{' | aiaudit fleet -``) is read no
further after :data:`~aiaudit.fleet.bounds.MAX_BAD_DOCUMENTS` of them, and the whole input
no further after :data:`~aiaudit.fleet.bounds.MAX_REPORTS` reports.

Decoding is most of the work (0.6 ms of CPU per ``dl-training`` report, 0.1 ms to
aggregate it), so with ``jobs > 1`` worker processes read, decode and reduce, and this
process only aggregates their reduced nodes, in input order.  Files of one document are
read by the workers themselves; stdin and files of many documents (larger than
:data:`~aiaudit.fleet.bounds.MAX_DOCUMENT`) are split into documents here and handed out in
order, with at most a few batches in flight, so a stream is never buffered whole and no
worker returns more than a batch.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from typing import IO, Any, Generator, Iterable, Iterator

from aiaudit.fleet import bounds
from aiaudit.fleet.aggregate import Aggregator
from aiaudit.fleet.authority import Judges
from aiaudit.fleet.extract import BadDocument, EventAssembler, EventPiece, NodeReport, reduce
from aiaudit.fleet.inputs import (
    STDIN,
    Document,
    InputProblem,
    decode,
    expand_sources,
    read_source,
    split,
    split_stream,
)
from aiaudit.fleet.model import Fleet

Reduced = NodeReport | EventPiece | str
"""What a document becomes: a node, an event piece, or a problem line."""
BATCH = 32
"""Files per task handed to a worker."""
TEXT_BATCH = 8
"""Documents of a stream per task: this process holds their text until a worker takes it."""
MIN_PARALLEL = 64
"""Fewer files than this are read in this process: starting workers costs more."""


def _reduce_doc(doc: Document | InputProblem) -> Reduced:
    if not isinstance(doc, Document):
        return str(doc)
    data = doc.data
    what = ("aiaudit event" if isinstance(data, dict) and data.get("event") is not None
            else "aiaudit JSON report")
    try:
        return reduce(data, doc.origin)
    except BadDocument as exc:
        return f"{doc.origin}: not a usable {what}: {exc}"
    except RecursionError:
        return f"{doc.origin}: not a usable {what}: nested too deeply"
    except Exception as exc:  # a bug must cost this document, not the fleet (tests: none)
        return (f"{doc.origin}: not read: internal error {type(exc).__name__}: "
                f"{str(exc)[:200]} (please report it)")


def _origin(src: str) -> str:
    return "<stdin>" if src == STDIN else src


def _end_of(src: str) -> str:
    return (f"{_origin(src)}: {bounds.MAX_BAD_DOCUMENTS} unusable documents: the rest is "
            f"not read")


def reduce_source(src: str, stdin: IO[str] | None = None) -> Iterator[Reduced]:
    """Every document of one source, reduced; after
    :data:`~aiaudit.fleet.bounds.MAX_BAD_DOCUMENTS` unusable ones, a last problem line and
    no more reading."""
    bad = 0
    for doc in read_source(src, stdin=stdin):
        r = _reduce_doc(doc)
        yield r
        if isinstance(r, str):
            bad += 1
            if bad >= bounds.MAX_BAD_DOCUMENTS:
                yield _end_of(src)
                return


def _reduce_files(paths: list[str]) -> list[Reduced]:
    """Worker: every document of these files, reduced."""
    return [r for p in paths for r in reduce_source(p)]


def _reduce_texts(texts: list[tuple[str, int, str] | InputProblem]) -> list[Reduced]:
    """Worker: documents split from a stream (``(origin, line, text)``), reduced."""
    return [str(t) if isinstance(t, InputProblem) else _reduce_doc(decode(t[2], t[0], t[1]))
            for t in texts]


def _batches(items: Iterable[Any], size: int = BATCH) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for it in items:
        batch.append(it)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _serial(sources: list[str | InputProblem], stdin: IO[str] | None
            ) -> Generator[Reduced, None, None]:
    for src in sources:
        if isinstance(src, InputProblem):
            yield str(src)
        else:
            yield from reduce_source(src, stdin)


def _many_documents(src: str) -> bool:
    """Whether ``src`` is split here (stdin, or a file larger than one document)."""
    if src == STDIN:
        return True
    try:
        return os.stat(src).st_size > bounds.MAX_DOCUMENT
    except OSError:
        return False


def _stream(src: str, stdin: IO[str] | None
            ) -> Iterator[tuple[str, int, str] | InputProblem]:
    if src == STDIN:
        yield from split_stream(stdin)
        return
    try:
        with open(src, encoding="utf-8") as fh:
            yield from split(fh, src)
    except UnicodeDecodeError:
        yield InputProblem(src, "not UTF-8 text")
    except OSError as exc:
        yield InputProblem(src, f"cannot read: {exc.strerror}")


class _Window:
    """Tasks in flight in the pool, in input order, with the problems each source has
    given so far (a source past the bound is fed no more)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pending: deque[tuple[str, Any]] = deque()
        self.bad: dict[str, int] = {}

    def drain(self, limit: int) -> Iterator[Reduced]:
        while len(self.pending) > limit:
            src, task = self.pending.popleft()
            for r in task.get():
                if isinstance(r, str):
                    self.bad[src] = self.bad.get(src, 0) + 1
                yield r


def _parallel(sources: list[str | InputProblem], stdin: IO[str] | None,
              jobs: int) -> Generator[Reduced, None, None]:
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs) as pool:
        w = _Window(2 * jobs)  # tasks in flight: bounds the stream text held here
        files: list[str] = []

        def flush() -> Iterator[Reduced]:
            for batch in _batches(files):
                w.pending.append(("", pool.apply_async(_reduce_files, (batch,))))
                yield from w.drain(w.limit)
            files.clear()

        for src in sources:
            if isinstance(src, InputProblem):
                yield from flush()
                yield from w.drain(0)
                yield str(src)
            elif _many_documents(src):
                yield from flush()
                for batch in _batches(_stream(src, stdin), TEXT_BATCH):
                    if w.bad.get(src, 0) >= bounds.MAX_BAD_DOCUMENTS:
                        yield from w.drain(0)
                        yield _end_of(src)
                        break
                    w.pending.append((src, pool.apply_async(_reduce_texts, (batch,))))
                    yield from w.drain(w.limit)
            else:
                files.append(src)
        yield from flush()
        yield from w.drain(0)


def default_jobs(args: Iterable[str] = ()) -> int:
    """Worker processes by default: the CPUs this process may run on, at most 8.  For a
    stream on stdin alone, one CPU fewer: this process then splits the stream and hands each
    report's text to a worker, work as costly as decoding it, so on 2 CPUs two workers were
    slower than none (10,000 reports: 10.3 s against 8.4 s, ``bench/bench_fleet.py``)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    if list(args) == [STDIN]:
        n -= 1
    return max(1, min(n, 8))


def collect(args: Iterable[str], *, stdin: IO[str] | None = None,
            jobs: int = 1, judges: Judges | None = None) -> Fleet:
    """The fleet of the reports and events named by ``args`` (files, directories, globs,
    ``-`` for stdin), read by ``jobs`` processes and judged by ``judges`` (default: the
    shipped ruleset of each group's name and version)."""
    sources = list(expand_sources(args))
    files = sum(1 for s in sources if isinstance(s, str) and s != STDIN)
    parallel = jobs > 1 and (files >= MIN_PARALLEL or STDIN in sources)
    reduced = _parallel(sources, stdin, jobs) if parallel else _serial(sources, stdin)
    agg = Aggregator(judges)
    events = EventAssembler()
    try:
        for r in reduced:
            if agg.full:
                agg.problem(f"more than {bounds.MAX_REPORTS:,} reports: the rest of the "
                            f"input is not read")
                break
            if isinstance(r, str):
                agg.problem(r)
            elif isinstance(r, EventPiece):
                node = events.add(r)
                if isinstance(node, str):
                    agg.problem(node)
                elif node is not None:
                    agg.add(node)
            else:
                agg.add(r)
    finally:
        reduced.close()  # a file left half read is closed, the workers stopped
    for origin, msg in events.unfinished():
        agg.problem(f"{origin}: {msg}")
    return agg.finish()
