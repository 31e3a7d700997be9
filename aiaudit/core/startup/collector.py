# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""The cyclic garbage collector during a scan's loading.

Loading a scan (some two hundred modules, the ruleset, the plugins) creates tens of
thousands of container objects that live until the process ends. CPython's collector does
not know that: every 700 new objects it scans the young ones, and each time the heap has
grown by a quarter it scans all of them again, so loading pays for several full collections
that find nothing to free. Here, in aiaudit's own process only (the console entry point
claims it with :func:`own_process`; an in-process caller of :func:`aiaudit.cli.main` or of
the API keeps its collector as it is), the collector is off while a command loads
(:func:`loading`: around building the parser, which imports the command's module, and around
a scan's plugins, ruleset and host), and what loading made is then moved to the permanent
generation (:func:`gc.freeze`) before the collector is turned back on. The rules' own
garbage is collected as usual, so a hostile host's cycles never pile up; what is frozen is
what loading made (the host files it reads are bounded by the read caps). A module whose
import drops cyclic garbage is followed by :func:`after_import`, so the freeze does not keep
it.

Measured (``bench/bench.py --instructions`` cases, 2026-12-02, with and without
:func:`own_process`): prolog 340.8 -> 331.7 M (-2.7%), live dl-training JSON 745.7 ->
728.0 M (-2.4%), small offline root 441.0 -> 422.9 M (-4.1%).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

_OWNED: list[bool] = []
"""Non-empty once the console entry point has claimed the process."""
_HELD: list[bool] = []
"""Non-empty while :func:`loading` holds the collector off."""
_COLLECTED: set[str] = set()
"""Modules :func:`after_import` collected after."""


def own_process() -> None:
    """Claim the process for aiaudit (the console entry point, which exits when the command
    is done): :func:`loading` then holds the collector off."""
    if not _OWNED:
        _OWNED.append(True)


@contextmanager
def loading() -> Iterator[None]:
    """While the body runs, no cyclic collection; after it, everything alive is frozen
    (never scanned again) and collection resumes.  Only in a claimed process whose
    collector is on; elsewhere the body just runs."""
    if not _OWNED or not gc.isenabled():
        yield
        return
    gc.disable()
    _HELD.append(True)
    try:
        yield
    finally:
        _HELD.clear()
        gc.freeze()
        gc.enable()


def after_import(name: str) -> None:
    """Called right after importing ``name``, a module whose import leaves cyclic garbage
    (jsonschema: attrs builds each of its classes twice and drops the first, 1,444 objects,
    half a megabyte): while :func:`loading` holds the collector, the young generation is
    collected once, so that the freeze does not keep that garbage for the whole run.
    Importing jsonschema this way costs a site-ruleset scan 10 M instructions (1%) and
    keeps its peak memory where it was without the collector held."""
    if _HELD and name not in _COLLECTED:
        _COLLECTED.add(name)
        gc.collect(0)
