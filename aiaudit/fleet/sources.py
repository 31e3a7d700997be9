"""Which files the command line names: files as given, directories walked, globs expanded;
``-`` is stdin.  Bounded, and never led in circles by symbolic links.

Python's ``glob.glob(pattern, recursive=True)`` follows symbolic links to directories under
``**``, so a link to ``.`` or to a parent makes it walk ``a/loop/loop/loop/...`` until the
path is too long, and two such links make the walk exponential (issue 25).  Here a ``**``
walks without following links to directories, as ``find`` does (and ``find -L`` would
not): a directory reached through a link is not entered (a file that is a link is read,
it cannot loop).  A pattern without ``**`` enters links as ``glob`` does, one directory
level per pattern component, so it cannot loop either.  Glob rules otherwise as
``glob.glob``: ``*`` and ``?`` do not match ``/`` nor a leading ``.``, ``**`` matches any
number of directories (none included).  Walks are iterative (a tree thousands of levels
deep does not exhaust Python's stack, as the recursive ``os.walk`` of Python 3.11 does) and
list one directory at a time.

Every walk looks at most :data:`~aiaudit.fleet.bounds.MAX_WALK` entries, and at most
:data:`~aiaudit.fleet.bounds.MAX_SOURCES` files are taken; a file named twice (a file and a
directory holding it, two globs) is read once.
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import os
import re
from typing import Iterable, Iterator

from aiaudit.core.startup.records import record
from aiaudit.fleet import bounds

SUFFIXES = (".json", ".jsonl", ".ndjson")
"""Files taken from a directory (recursively, in name order)."""
STDIN = "-"


@record
class InputProblem:
    """A source or document that could not be used: one line for the user."""

    origin: str
    message: str

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}"


class _Overrun(Exception):
    """A walk went past a bound: the problem to report, and the rest is not read."""

    def __init__(self, origin: str, message: str) -> None:
        super().__init__(message)
        self.problem = InputProblem(origin, message)


class _Budget:
    """Entries looked at and files taken so far, against the bounds."""

    def __init__(self) -> None:
        self.entries = 0
        self.files = 0
        self.seen: set[str] = set()
        self.walked: set[str] = set()

    def look(self, origin: str) -> None:
        """Count one more directory entry looked at."""
        self.entries += 1
        if self.entries > bounds.MAX_WALK:
            raise _Overrun(origin, f"more than {bounds.MAX_WALK} directory entries looked "
                                   f"at: the rest is not read")


def _entries(folder: str, budget: _Budget, origin: str) -> list[os.DirEntry[str]]:
    """The entries of ``folder``, by name; an unreadable folder has none (as ``os.walk``)."""
    out = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                budget.look(origin)
                out.append(entry)
    except OSError:
        return []
    out.sort(key=lambda e: e.name)
    return out


def _is_dir(entry: os.DirEntry[str], follow: bool) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


def _directory(arg: str, budget: _Budget) -> Iterator[str | InputProblem]:
    """Report files under directory ``arg``: each folder's files in name order, then its
    folders (links to folders not entered), without recursion (a tree 5,000 levels deep
    must not exhaust Python's stack)."""
    found = False
    budget.walked.add(os.path.normpath(arg))
    stack = [arg]
    while stack:
        folder = stack.pop()
        subdirs = []
        for entry in _entries(folder, budget, arg):
            if _is_dir(entry, False):
                subdirs.append(entry.path)
            elif entry.name.endswith(SUFFIXES) and not entry.name.startswith("."):
                found = True
                yield entry.path
        stack.extend(reversed(subdirs))
    if not found:
        yield InputProblem(arg, "directory holds no .json/.jsonl report")


@functools.lru_cache(maxsize=256)
def _component(part: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(part), re.DOTALL)


State = tuple[bool, ...]
"""Glob matching carried down a walk: ``state[i]`` is whether the first ``i`` pattern
components match the path so far."""


def _start(parts: list[str]) -> State:
    state = [True] + [False] * len(parts)
    for i, part in enumerate(parts):
        state[i + 1] = part == "**" and state[i]
    return tuple(state)


def _step(parts: list[str], state: State, name: str) -> State:
    """The state after one more path component ``name`` (``**``: any number of components;
    ``*``, ``?``, ``[...]`` within one; a leading ``.`` matched only by a pattern that
    starts with one, as ``glob``)."""
    hidden = name.startswith(".")
    nxt = [False] * (len(parts) + 1)
    for i, part in enumerate(parts):
        if part == "**":
            nxt[i + 1] = nxt[i] or (not hidden and (state[i] or state[i + 1]))
        else:
            nxt[i + 1] = (state[i] and (not hidden or part.startswith("."))
                          and _component(part).match(name) is not None)
    return tuple(nxt)


def _pattern(arg: str) -> tuple[str, list[str]]:
    """The folder named by the leading components without magic, and the rest."""
    parts = [p for p in arg.split(os.sep) if p not in ("", ".")]
    fixed: list[str] = []
    while parts and not glob.has_magic(parts[0]):
        fixed.append(parts.pop(0))
    if arg.startswith(os.sep):
        return os.path.join(os.sep, *fixed), parts
    return os.path.join(*fixed or [os.curdir]), parts


def _complete(parts: list[str], state: State, nxt: State, entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` matches the whole pattern: a last ``**`` matches no component only
    after a directory, as glob's does."""
    if not nxt[-1] or parts[-1] != "**":
        return nxt[-1]
    return _is_dir(entry, True) or (not entry.name.startswith(".") and any(state[-2:]))


def _glob(arg: str, budget: _Budget) -> list[str]:
    """Paths matching pattern ``arg``, sorted.  The leading components without magic name a
    folder; below it the walk goes only where the pattern can still match, into links to
    folders only when the pattern has no ``**`` (its depth then bounds the walk)."""
    top, parts = _pattern(arg)
    if not parts:  # no magic at all: the path itself, if it is there
        return [arg] if os.path.lexists(arg) else []
    if not os.path.isdir(top):
        return []
    follow = "**" not in parts
    here = top == os.curdir  # paths as glob writes them: "x.json", not "./x.json"
    found = []
    stack = [(top, _start(parts))]
    while stack:
        folder, state = stack.pop()
        for entry in _entries(folder, budget, arg):
            nxt = _step(parts, state, entry.name)
            if _complete(parts, state, nxt, entry):
                found.append(entry.path[2:] if here else entry.path)
            if (any(nxt[:-1]) or (nxt[-1] and parts[-1] == "**")) and _is_dir(entry, follow):
                stack.append((entry.path, nxt))
    return sorted(found)


def _one(arg: str, budget: _Budget) -> Iterator[str | InputProblem]:
    if arg == STDIN:
        yield arg
    elif os.path.isdir(arg):
        yield from _directory(arg, budget)
    elif os.path.lexists(arg):
        yield arg
    else:
        matches = _glob(arg, budget)
        if not matches:
            yield InputProblem(arg, "no such file (and no file matches it as a glob)")
        for m in matches:
            if not os.path.isdir(m):
                yield m
            elif not _under_walked(m, budget):
                yield from _directory(m, budget)


def _under_walked(path: str, budget: _Budget) -> bool:
    """Whether ``path`` is a folder already walked or inside one (``reports/**`` matches
    ``reports`` and every folder below it: each is walked once)."""
    p = os.path.normpath(path)
    while True:
        if p in budget.walked:
            return True
        parent = os.path.dirname(p)
        if parent == p or not parent:
            return False
        p = parent


def expand_sources(args: Iterable[str]) -> Iterator[str | InputProblem]:
    """The files (or ``-``) named by ``args``: files as given, directories walked for
    :data:`SUFFIXES`, other words as globs; each file once; a word that names nothing, or a
    walk past the bounds, is a problem."""
    budget = _Budget()
    for arg in args:
        try:
            for src in _one(arg, budget):
                if isinstance(src, InputProblem) or src == STDIN:
                    yield src
                    continue
                key = os.path.normpath(src)
                if key in budget.seen:
                    continue
                if budget.files >= bounds.MAX_SOURCES:
                    raise _Overrun(arg, f"more than {bounds.MAX_SOURCES} files: the rest "
                                        f"is not read")
                budget.seen.add(key)
                budget.files += 1
                yield src
        except _Overrun as exc:
            yield exc.problem
            return
