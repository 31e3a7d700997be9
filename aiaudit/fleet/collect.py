"""Read every source and aggregate: sources in, one :class:`~aiaudit.fleet.model.Fleet` out.

A document that cannot be used becomes one problem line naming it (file, line); the others
are still aggregated.  Each document is reduced as soon as it is decoded and then dropped.
"""

from __future__ import annotations

from typing import IO, Iterable

from aiaudit.fleet.aggregate import Aggregator
from aiaudit.fleet.extract import BadDocument, EventAssembler, from_report, is_event
from aiaudit.fleet.inputs import Document, expand_sources, read_documents
from aiaudit.fleet.model import Fleet


def collect(args: Iterable[str], *, stdin: IO[str] | None = None) -> Fleet:
    """The fleet of the reports and events named by ``args`` (files, directories, globs,
    ``-`` for stdin)."""
    agg = Aggregator()
    events = EventAssembler()
    problems: list[str] = []
    for doc in read_documents(expand_sources(args), stdin=stdin):
        if not isinstance(doc, Document):
            problems.append(str(doc))
            continue
        data = doc.data
        try:
            if isinstance(data, dict) and is_event(data):
                node = events.add(data, doc.origin)
                if node is not None:
                    agg.add(node)
            else:
                agg.add(from_report(data, doc.origin))
        except BadDocument as exc:
            what = "aiaudit event" if isinstance(data, dict) and is_event(data) else \
                "aiaudit JSON report"
            problems.append(f"{doc.origin}: not a usable {what}: {exc}")
        del doc, data  # the decoded document goes now, not at the next iteration
    problems.extend(f"{origin}: {msg}" for origin, msg in events.unfinished())
    return agg.finish(problems)
