"""Read every source and aggregate: sources in, one :class:`~aiaudit.fleet.model.Fleet` out.

A document that cannot be used becomes one problem line naming it (file, line); the others
are still aggregated.  Each document is reduced as soon as it is decoded and then dropped.

Decoding is most of the work (0.6 ms of CPU per ``dl-training`` report, 0.1 ms to
aggregate it), so with ``jobs > 1`` worker processes read, decode and reduce, and this
process only aggregates their reduced nodes, in input order.  Files are read by the
workers themselves; stdin is split into documents here and handed out in order, with at
most a few batches in flight, so a stream is never buffered whole.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from typing import IO, Any, Iterable, Iterator

from aiaudit.fleet.aggregate import Aggregator
from aiaudit.fleet.extract import BadDocument, EventAssembler, EventPiece, NodeReport, reduce
from aiaudit.fleet.inputs import (
    STDIN,
    Document,
    InputProblem,
    decode,
    expand_sources,
    read_documents,
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
    try:
        return reduce(doc.data, doc.origin)
    except BadDocument as exc:
        data = doc.data
        what = ("aiaudit event" if isinstance(data, dict) and data.get("event")
                else "aiaudit JSON report")
        return f"{doc.origin}: not a usable {what}: {exc}"


def _reduce_files(paths: list[str]) -> list[Reduced]:
    """Worker: every document of these files, reduced."""
    return [_reduce_doc(d) for d in read_documents(paths)]


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


def _serial(sources: list[str | InputProblem], stdin: IO[str] | None) -> Iterator[Reduced]:
    for doc in read_documents(sources, stdin=stdin):
        yield _reduce_doc(doc)


def _parallel(sources: list[str | InputProblem], stdin: IO[str] | None,
              jobs: int) -> Iterator[Reduced]:
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs) as pool:
        pending: deque[Any] = deque()
        window = 2 * jobs  # tasks in flight: bounds the stream text held here

        def drain(limit: int) -> Iterator[Reduced]:
            while len(pending) > limit:
                yield from pending.popleft().get()

        files: list[str] = []
        for src in sources:
            if isinstance(src, InputProblem):
                yield from drain(0)
                yield str(src)
            elif src == STDIN:
                for batch in _batches(files):
                    pending.append(pool.apply_async(_reduce_files, (batch,)))
                    yield from drain(window)
                files = []
                for batch in _batches(split_stream(stdin), TEXT_BATCH):
                    pending.append(pool.apply_async(_reduce_texts, (batch,)))
                    yield from drain(window)
            else:
                files.append(src)
        for batch in _batches(files):
            pending.append(pool.apply_async(_reduce_files, (batch,)))
            yield from drain(window)
        yield from drain(0)


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
            jobs: int = 1) -> Fleet:
    """The fleet of the reports and events named by ``args`` (files, directories, globs,
    ``-`` for stdin), read by ``jobs`` processes."""
    sources = list(expand_sources(args))
    files = sum(1 for s in sources if isinstance(s, str) and s != STDIN)
    parallel = jobs > 1 and (files >= MIN_PARALLEL or STDIN in sources)
    reduced = _parallel(sources, stdin, jobs) if parallel else _serial(sources, stdin)
    agg = Aggregator()
    events = EventAssembler()
    problems: list[str] = []
    for r in reduced:
        if isinstance(r, str):
            problems.append(r)
        elif isinstance(r, EventPiece):
            node = events.add(r)
            if node is not None:
                agg.add(node)
        else:
            agg.add(r)
    problems.extend(f"{origin}: {msg}" for origin, msg in events.unfinished())
    return agg.finish(problems)
