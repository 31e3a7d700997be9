# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Start-up machinery kept for speed, in one place, each piece with the figure that
justifies it.

A scan is short (a Slurm prolog runs one before every job), and most of its cost is Python
starting and importing: the checks themselves are a small part.  Each piece below replaces
standard machinery that is correct but slow at start-up; each was measured by turning it
off in an installed copy and running ``bench/bench.py --instructions`` (callgrind
instruction counts, stable on a busy machine; 2026-12-01, CPython 3.11, this project's
2-core Debian 12 VM).  The rule: a piece that saves less than 1% of a prolog scan is
dropped.

===============================  ===========================  ===========  ============
piece                            replaces                     prolog scan  live scan
===============================  ===========================  ===========  ============
:mod:`.records` (``@record``)    ``@dataclass(frozen=True)``  -293 M (48%) -554 M (43%)
:mod:`.twins` (JSON twins)       PyYAML at every scan         -99 M (24%)  -229 M (24%)
:mod:`.entrypoints`              ``importlib.metadata``       -93 M (23%)  -83 M (10%)
``os._exit`` (``aiaudit.cli``)   interpreter teardown         -28 M (8%)   -42 M (5%)
:func:`lazy_pattern`             regexes compiled at import   -16 M (5%)   -28 M (4%)
:func:`random_uuid`              :mod:`uuid` (and platform)   -10 M (3%)   -10 M (1%)
:mod:`.init_templates`           ``__init__`` templates       -17 M (5%)   -10 M (1%)
                                 compiled in every process
:mod:`.collector`                collections while loading    -9 M (3%)    -18 M (2%)
:mod:`.imports`                  the path finder's search     -8 M (3%)    -22 M (3%)
===============================  ===========================  ===========  ============

(percentages of the scan without the piece; the scan with every piece: prolog 320 M, live
dl-training JSON 743 M instructions; the ``init_templates`` row was measured on 2026-12-02,
with the scan at prolog 351 M, live JSON 770 M, its rules grown since; the ``collector``
row on the same day, with the scan at prolog 332 M, live JSON 728 M; ``imports``: its
module docstring.)
"""

from __future__ import annotations

import re
from typing import AnyStr, Callable


def lazy_pattern(pattern: AnyStr, flags: int = 0) -> Callable[[], re.Pattern[AnyStr]]:
    """A regular expression compiled on first use: ``_X = lazy_pattern(r"...")``, then
    ``_X().match(text)``.  A scan imports parsers for files most hosts do not have (GRUB
    menus, NVIDIA driver versions, wheel names); compiling each of their expressions at
    import costs about 0.1 ms (0.4 to 1 M instructions), paid even when nothing is parsed.
    Text or bytes, as :func:`re.compile`."""
    compiled: list[re.Pattern[AnyStr]] = []

    def get() -> re.Pattern[AnyStr]:
        if not compiled:
            compiled.append(re.compile(pattern, flags))
        return compiled[0]

    return get


def random_uuid() -> str:
    """A random (version 4, RFC 4122) UUID string, as ``str(uuid.uuid4())`` gives, without
    importing :mod:`uuid` (which imports :mod:`platform`)."""
    import os

    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # variant RFC 4122
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
