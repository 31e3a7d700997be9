"""Every bound on what ``aiaudit fleet`` reads and writes, in one place.

Anyone who can write one node's report can hand the fleet anything; what a hostile input
costs must be bounded, and only that input may pay: it becomes one problem line (exit 5 when
the fleet would otherwise pass), the rest of the fleet is aggregated.  Each bound is far
above what an honest fleet reaches (a ``dl-training`` report: 104 results, 180 KB compact,
400 KB decoded) and low enough that the worst input stays within the README's promise of
100 MB and seconds of CPU (``tests/fleet/test_hostile_fleet.py`` measures each hostile case
in a child process).
"""

from __future__ import annotations

MAX_DOCUMENT = 16 * 1024 * 1024
"""Bytes of one document (a report or an event).  A longer one is skipped as it is read,
never held whole: the reader keeps at most this much text of an unfinished document."""

MAX_DECODED = 40 * 1024 * 1024
"""Estimated bytes of the objects one document decodes to (:func:`decoded_estimate`).  JSON
that is mostly punctuation decodes to up to 25 times its size (``[{},{},...]``: 72 bytes of
objects for 3 bytes of text), so the byte bound alone would allow 400 MB."""

CHUNK = 1024 * 1024
"""Characters read at a time from a stream: a line longer than this comes in pieces."""

MAX_SKIP = 64 * 1024 * 1024
"""Characters skipped in a row while looking for the next document (a line that starts with
``{``): past this, the rest of the source is not read (``cat /dev/urandom | fleet -``)."""

MAX_BAD_DOCUMENTS = 100
"""Unusable documents in one source before the rest of it is not read: ``yes '{' | aiaudit
fleet -`` ends after this many problem lines instead of never."""

MAX_PROBLEMS = 1000
"""Problem lines kept (and printed); more are counted in one last line."""

MAX_REPORTS = 100_000
"""Reports (or event runs) aggregated; the input beyond is not read.  100,000 nodes is more
than the largest GPU clusters (an 8-GPU node each: 800,000 GPUs)."""

MAX_RESULTS = 20_000
"""Results of one report (a ``dl-training`` scan has 104; a check may give at most 10,000
per rule, ``aiaudit.core.wellformed``).  A report with more is refused."""

MAX_OPEN_RUNS = 20_000
"""Event runs whose ``summary`` event has not yet arrived, held at once."""

MAX_GROUPS = 16
"""Groups (aiaudit version and ruleset) in one fleet: a rolling upgrade has two or three.  A
report that would start another is refused."""

MAX_RULES = 2000
"""Rules of one group judged by the reports' own severities (no ruleset to judge them by):
a report that names more new rules than there is room for is refused.  Shipped rulesets
have 5 to 93 rules."""

MAX_KEYS = 200_000
"""Distinct (group, rule, subject) keys whose values are compared for drift; past it a
result still counts for its rule's status, its value is not compared (one problem line)."""

MAX_VALUES = 200_000
"""Distinct ``actual`` values kept for drift (each at most ``extract.MAX_VALUE``
characters), with the same overflow as :data:`MAX_KEYS`."""

MAX_FACTS = 32
"""Host facts read from one report's ``host`` object (a report has about 12 fields)."""

MAX_CLASS_FACTS = 64
"""Class facts read from one report's ``inventory.facts`` result (the collectors gather
about 21: GPUs, links, HCAs, memory, CPUs, kernel, driver stack)."""

MAX_SOURCES = MAX_REPORTS
"""Files taken from the command line's directories and globs."""

MAX_WALK = 400_000
"""Directory entries looked at while walking directories and globs (a name held for sorting
costs ~100 bytes: 40 MB at most)."""

FUTURE_SKEW_S = 600.0
"""How far a report's start time may lie ahead of this machine's clock (clock skew between
nodes and the machine that runs the fleet).  A report from further in the future is refused:
it must not win over a node's real report by claiming to be newer."""

MAX_SINCE_BYTES = 32 * 1024 * 1024
"""Bytes of a ``--since`` fleet report (10,000 nodes of ``dl-training`` write ~2 MB)."""

MAX_SINCE_NAMES = 2_000_000
"""Host names the failing lists of a ``--since`` report may expand to, all lists together
(each node once per rule it failed: 10,000 nodes failing all 99 ``dl-training`` rules is
990,000), and a failing list at most as many as its group has nodes.  A 13 KB list of
ranges cost 2.6 GB before this bound; now 60 MB and 3 s of CPU at most."""

MAX_PROM_DRIFT = 1000
"""Drift series written to Prometheus (the subjects with the most outliers); the JSON
report lists them all."""


def decoded_estimate(text: str) -> int:
    """An upper estimate of the bytes ``json.loads(text)`` allocates: the text itself plus
    72 bytes for every value separator and container (a decoded value costs 24 to 144
    bytes).  Measured with ``tracemalloc`` (CPython 3.11): 400,000 ``{}`` 29 MB (estimated
    58 MB), 200,000 distinct one-digit members of one object 29 MB (31 MB), 100,000
    seven-field results 44 MB (117 MB), a 180 KB compact ``dl-training`` report 0.43 MB
    (0.74 MB): an honest report of up to about 10 MB passes :data:`MAX_DECODED`.  Four
    C-speed counts of the text."""
    return len(text) + 72 * (text.count(",") + text.count(":") + text.count("{")
                             + text.count("["))
