"""sysctl.d parsing and the effective persisted value, as systemd-sysctl and procps decide.

Sources: systemd ``src/sysctl/sysctl.c`` (``parse_file``, ``apply_all``,
``apply_glob_option``), ``src/basic/sysctl-util.c`` (``sysctl_normalize``),
``src/basic/conf-files.c``; procps-ng ``src/sysctl.c`` (``PreloadSystem``, ``Preload``,
``parse_setting_line``, ``write_setting_list``, ``settinglist_findpath``); sysctl.d(5).
See SEMANTICS §3.  ``tests/linux/sysctl/test_conf_oracle.py`` checks both deciders against
the real systemd-sysctl (252) and procps (4.0.2) on a generated corpus.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from typing import Iterable, Iterator, NamedTuple, Sequence

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record

SYSTEMD_DIRS = ("/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d")
"""systemd ``CONF_PATHS("sysctl.d")`` in priority order (split-usr ``/lib`` dropped ~v255;
on merged-usr systems it is the same directory as ``/usr/lib``)."""
SYSTEMD_DIRS_SPLIT_USR = (*SYSTEMD_DIRS, "/lib/sysctl.d")
PROCPS4_DIRS = ("/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d",
                "/lib/sysctl.d")
"""procps-ng 4.0.x and 3.3.17 ``sysctl --system`` directory order."""
PROCPS_OLD_DIRS = ("/run/sysctl.d", "/etc/sysctl.d", "/usr/local/lib/sysctl.d",
                   "/usr/lib/sysctl.d", "/lib/sysctl.d")
"""procps 3.3.15 and 3.3.16 read ``/run`` before ``/etc`` (a same-name /run file wins)."""
SYSCTL_CONF = "/etc/sysctl.conf"
MAX_LINE = 4096 * 8  # systemd LONG_LINE_MAX is 1 MiB; anything beyond a few KB is garbage
_GLOB_CHARS = "*?["
_GLOB_SET = frozenset(_GLOB_CHARS)
_SYSTEMD_WS = " \t\n\r"
"""systemd ``WHITESPACE`` (``strstrip``); Python's ``str.strip()`` strips more."""
_C_SPACE = " \t\n\v\f\r"
"""C ``isspace`` in the C locale (procps ``lstrip``/``rstrip``)."""
_SYSTEMD_EOL = re.compile(r"\r\n|\r|\n")
"""systemd ``read_line`` ends a line at ``\\n``, ``\\r`` or ``\\r\\n``."""
PROC_SYS = "/proc/sys/"


class Entry(NamedTuple):
    """One meaningful line of a sysctl.d file.

    A named tuple, not a record: a sysctl.d tree of 100,000 files keeps one per line (two
    with procps' reading when they differ), and a tuple costs 96 bytes where a record with
    its instance dictionary costs 160 (``tests/linux/sysctl/test_many_files.py``).  Build
    it with :func:`entry`."""

    key: str
    """Normalised key in slash form (``net/ipv4/conf/eth0.100/rp_filter``); for entries from
    :func:`parse_procps`, the path below ``/proc/sys/`` as procps builds it (not simplified)."""
    value: str | None
    """The value (stripped), or ``None`` for a ``-key`` exclusion entry."""
    ignore_failure: bool
    """``-key = value``: a failed write is ignored."""
    file: str
    """Host path of the file."""
    line: int
    """Line number (from 1)."""
    written: str | None
    """The line as written; ``None`` when it is the canonical ``key = value`` (most lines:
    not keeping a second copy of each saves 70 bytes a line)."""

    @property
    def raw(self) -> str:
        """The line as written."""
        return self.written if self.written is not None else _canonical(
            self.key, self.value, self.ignore_failure)

    @property
    def is_glob(self) -> bool:
        """True if the key contains glob characters."""
        return not _GLOB_SET.isdisjoint(self.key)

    @property
    def source(self) -> str:
        """``etc/sysctl.d/10-x.conf:3``: the line in display form (root-relative)."""
        return f"{self.file.lstrip('/')}:{self.line}"


def _canonical(key: str, value: str | None, ignore: bool) -> str:
    """The line ``key = value`` (``-key``, ``-key = value``) with the key in dotted form."""
    head = ("-" if ignore or value is None else "") + dotted(key)
    return head if value is None else f"{head} = {value}"


def entry(key: str, value: str | None, ignore_failure: bool, file: str, line: int,
          raw: str) -> Entry:
    """An :class:`Entry` for the line ``raw``, which is kept only when it is not the
    canonical form of the rest."""
    return Entry(key, value, ignore_failure, file, line,
                 None if raw == _canonical(key, value, ignore_failure) else raw)


@record
class Warning_:
    """A line the real program warns about and ignores."""

    file: str
    line: int
    message: str


def normalize_key(key: str) -> str:
    """``sysctl_normalize``: if the first separator is ``.``, swap ``.`` and ``/``;
    then simplify the path and drop the leading slash.

    >>> normalize_key("net.ipv4.conf.eth0/100.rp_filter")
    'net/ipv4/conf/eth0.100/rp_filter'
    >>> normalize_key("/net/ipv4/ip_forward")
    'net/ipv4/ip_forward'
    """
    first = next((c for c in key if c in "./"), None)
    if first == ".":
        key = key.translate(str.maketrans("./", "/."))
    parts = [p for p in key.split("/") if p and p != "."]
    return "/".join(parts)


def dotted(key: str) -> str:
    """Display form of a slash key (``net/ipv4/conf/eth0.100/rp_filter`` ->
    ``net.ipv4.conf.eth0/100.rp_filter``), the inverse of :func:`normalize_key`."""
    return key.translate(str.maketrans("./", "/."))


def _systemd_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` as systemd ``read_line`` ends them, one at a time (a 4 MiB
    file of short lines is not split into a million strings at once)."""
    pos = 0
    for m in _SYSTEMD_EOL.finditer(text):
        yield text[pos:m.start()]
        pos = m.end()
    if pos < len(text):
        yield text[pos:]


def _procps_lines(text: str) -> Iterator[tuple[str, bool]]:
    """(line, whether a newline ends it) as ``getline`` reads them, one at a time."""
    pos, end = 0, len(text)
    while pos < end:
        i = text.find("\n", pos)
        if i < 0:
            yield text[pos:], False
            return
        yield text[pos:i], True
        pos = i + 1


def parse(text: str, file: str, *, limit: int | None = None
          ) -> tuple[list[Entry], list[Warning_]]:
    """Parse one sysctl.d file the way systemd-sysctl's ``parse_file`` does.

    Comments start with ``#`` or ``;`` as the first non-blank character; ``-key = v``
    ignores write failures; ``-key`` alone is an exclusion entry; other lines without ``=``
    are warned about and ignored.  Raises :class:`ParseError` only for binary content.
    With ``limit``, parsing stops once more than ``limit`` entries were found.
    """
    if "\x00" in text:
        raise ParseError("binary content (NUL byte); not a sysctl.d file", source=file)
    entries: list[Entry] = []
    warnings: list[Warning_] = []
    for n, raw in enumerate(_systemd_lines(text), 1):
        if limit is not None and len(entries) > limit:
            break
        p = raw.strip(_SYSTEMD_WS)
        if not p or p[0] in "#;":
            continue
        if len(p) > MAX_LINE:
            warnings.append(Warning_(file, n, "line too long, ignored"))
            continue
        ignore = False
        value: str | None
        if "=" in p:
            if p[0] == "-":
                ignore = True
                p = p[1:]
            k, _, v = p.partition("=")
            value = v.strip(_SYSTEMD_WS)
        else:
            if p[0] != "-":
                warnings.append(Warning_(file, n, f"line is not an assignment, ignoring: {p}"))
                continue
            k, value = p[1:], None
        key = normalize_key(k.strip(_SYSTEMD_WS))
        if not key:
            warnings.append(Warning_(file, n, "empty key, ignoring"))
            continue
        entries.append(entry(key, value, ignore, file, n, raw))
    return entries, warnings


@record
class ConfFile:
    """A configuration file found in one of the directories."""

    name: str
    """Basename (the sort and override key)."""
    path: str
    """Host path."""
    masked: bool = False
    """Symlink to /dev/null (or empty): hides same-named files, contributes nothing."""


def order_files(listing: Sequence[tuple[str, Sequence[str]]], *,
                hidden: bool = False) -> list[ConfFile]:
    """systemd ``conf_files_list``: ``*.conf`` files (no dotfiles) from the dirs in priority
    order; the first dir holding a basename wins; the survivors sorted by basename (strcmp).

    ``listing`` is ``[(dir, [names...]), ...]`` in priority order.  ``hidden=True`` keeps
    dotfiles, as procps ``PreloadSystem`` does (it only wants a name of at least five
    characters ending in ``.conf``).
    """
    chosen: dict[str, ConfFile] = {}
    for d, names in listing:
        for name in names:
            if not name.endswith(".conf") or name in chosen:
                continue
            if name.startswith(".") and not hidden:
                continue
            chosen[name] = ConfFile(name, f"{d.rstrip('/')}/{name}")
    return [chosen[n] for n in sorted(chosen, key=lambda s: s.encode("utf-8", "surrogateescape"))]


def _component_match(pattern: str, name: str) -> bool:
    """glob(3) matching of one path component: no ``/`` inside, a leading ``.`` only
    matched explicitly, ``[^...]`` negates like ``[!...]`` (glibc ``fnmatch``)."""
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch_fast(name, pattern.replace("[^", "[!"))


def fnmatch_fast(name: str, pattern: str) -> bool:
    """``fnmatch.fnmatchcase(name, pattern)``, without compiling a regular expression for
    the common patterns.

    :func:`fnmatch.fnmatchcase` compiles each pattern once and keeps 32,768 in an LRU
    cache: a sysctl.d tree of 50,000 distinct globs, matched against each rule's key,
    compiled every pattern again on every call (a scan ran past 60 s).  A pattern without
    glob characters is compared as a string; one whose literal head does not start
    ``name`` cannot match; one with only ``*`` and ``?`` (no ``[`` set) is matched by
    :func:`_wild_match`; only ``[`` sets still go to :mod:`fnmatch`.  Property-tested
    against :func:`fnmatch.fnmatchcase` (tests/test_hostile_runtime.py)."""
    cut = _first_glob(pattern)
    if cut < 0:
        return name == pattern
    if not name.startswith(pattern[:cut]):
        return False
    if "[" in pattern:
        return fnmatch.fnmatchcase(name, pattern)
    return _wild_match(name, pattern)


def _first_glob(pattern: str) -> int:
    """Index of the first ``*``, ``?`` or ``[`` in ``pattern``; -1 if none."""
    cut = -1
    for c in _GLOB_CHARS:
        i = pattern.find(c)
        if i >= 0 and (cut < 0 or i < cut):
            cut = i
    return cut


def _wild_match(name: str, pattern: str) -> bool:
    """``*`` (any run) and ``?`` (one character) matching, everything else literal, as
    fnmatch treats a pattern without ``[``: the classic greedy scan that backtracks only
    to the last ``*``, O(len(name) x len(pattern)) at worst, with no recursion and no
    regular expression."""
    if len(pattern) - pattern.count("*") > len(name):
        return False  # more characters to match than the name has
    n, m = len(name), len(pattern)
    i = j = 0
    star = -1
    mark = 0
    while i < n:
        if j < m and (pattern[j] == "?" or pattern[j] == name[i]) and pattern[j] != "*":
            i += 1
            j += 1
        elif j < m and pattern[j] == "*":
            star, mark = j, i
            j += 1
        elif star >= 0:
            j = star + 1
            mark += 1
            i = mark
        else:
            return False
    while j < m and pattern[j] == "*":
        j += 1
    return j == m


def glob_matches(pattern: str, key: str) -> bool:
    """True if glob(3) on ``/proc/sys/<pattern>`` would produce ``/proc/sys/<key>`` (both in
    normalised slash form): component by component, ``*`` never crosses a ``/``."""
    pp, kp = pattern.split("/"), key.split("/")
    return len(pp) == len(kp) and all(_component_match(a, b) for a, b in zip(pp, kp, strict=True))


@record
class Decision:
    """The persisted value of one key and the line that decided it."""

    key: str
    value: str | None
    """The value written at boot, or ``None`` if nothing writes the key."""
    entry: Entry | None
    """The deciding line (``None`` when nothing sets the key)."""
    excluded_by: Entry | None = None
    """A ``-key`` exclusion that stops globs (systemd) from setting it."""
    overridden: tuple[Entry, ...] = ()
    """Earlier lines for the same key that lost."""


def _matches(entry: Entry, key: str) -> bool:
    if entry.is_glob:
        return glob_matches(entry.key, key)
    return entry.key == key


def systemd_decide(entries: Iterable[Entry], key: str) -> Decision:
    """The value systemd-sysctl writes to ``key`` given all entries in file order.

    The options map keeps the last assignment of each literal key (an exclusion entry
    replaces an earlier assignment of the same key, and vice versa); an explicit entry or an
    exclusion for ``key`` makes every glob skip it; otherwise the last matching glob in map
    order writes it (an overwritten glob key moves to the end of the ordered map).
    """
    omap: dict[str, Entry] = {}
    lost: list[Entry] = []
    for e in entries:
        prev = omap.get(e.key)
        if prev is not None:
            if prev.value == e.value:
                continue  # same value: systemd keeps the first, only merging ignore_failure
            del omap[e.key]
            if _matches(prev, key):
                lost.append(prev)
        omap[e.key] = e
    explicit = omap.get(key)
    if explicit is not None:
        if explicit.value is None:
            return Decision(key, None, None, excluded_by=explicit, overridden=tuple(lost))
        return Decision(key, explicit.value, explicit, overridden=tuple(lost))
    winner: Entry | None = None
    for e in omap.values():
        if e.is_glob and e.value is not None and glob_matches(e.key, key):
            if winner is not None:
                lost.append(winner)
            winner = e
    if winner is None:
        return Decision(key, None, None, overridden=tuple(lost))
    return Decision(key, winner.value, winner, overridden=tuple(lost))


def _c_lstrip(s: str) -> str:
    return s.lstrip(_C_SPACE)


def _c_rstrip(s: str) -> str:
    """procps ``rstrip``: never strips the first character, even if it is a space."""
    return s[:1] + s[1:].rstrip(_C_SPACE) if s else s


def _slashdot(key: str) -> str:
    """procps ``slashdot(p, '.', '/')``: if the first separator is ``.``, swap ``.`` and
    ``/``; unlike systemd, empty and ``.`` components and a leading ``/`` are kept."""
    first = next((c for c in key if c in "./"), None)
    if first == ".":
        return key.translate(str.maketrans("./", "/."))
    return key


def parse_procps(text: str, file: str, *, limit: int | None = None) -> list[Entry]:
    """Parse one file as procps-ng 4.0 ``sysctl --system`` does (``Preload`` and
    ``parse_setting_line``).  ``Entry.key`` is the path below ``/proc/sys/`` exactly as
    procps builds it (``slashdot``, not simplified: ``/vm/x`` keeps its slash), because
    procps compares these strings, not normalised keys, to let explicit entries and
    exclusions stop a glob.  Raises :class:`ParseError` only for binary content.  With
    ``limit``, parsing stops once more than ``limit`` entries were found.
    """
    if "\x00" in text:
        raise ParseError("binary content (NUL byte); not a sysctl.d file", source=file)
    entries: list[Entry] = []
    for n, (raw, has_nl) in enumerate(_procps_lines(text), 1):
        if limit is not None and len(entries) > limit:
            break
        # getline() keeps the newline: a line of one character plus newline has rlen 2
        line = raw + ("\n" if has_nl else "")
        if len(line) < 2:
            continue
        key = _c_lstrip(line)
        if len(key) < 2 or key[0] in "#;":
            continue
        value: str | None
        ignore = False
        if "=" not in key:
            if key[0] != "-":
                continue  # "invalid syntax, continuing..."
            key, value = _c_rstrip(key[1:]), None
        else:
            key, _, v = key.partition("=")
            if not key:
                continue  # "=value": procps reports a malformed setting and goes on
            if key[0] == "-":
                ignore, key = True, key[1:]
            value = _c_rstrip(_c_lstrip(v))
            key = _c_rstrip(key)
        if not key:
            continue
        entries.append(entry(_slashdot(key), value, ignore, file, n, raw))
    return entries


def _glob_expand(pattern: str, target: str) -> str | None:
    """The path glob(3) reports for ``target`` when expanding ``pattern``, or ``None`` if
    it does not match.  glob keeps the literal parts of the pattern as written (so
    ``/proc/sys//vm/*`` gives ``/proc/sys//vm/swappiness``)."""
    if pattern.endswith("/"):
        return None
    want = [p for p in target.split("/") if p]
    out: list[str] = []
    i = 0
    for comp in pattern.split("/"):
        if comp in ("", "."):
            out.append(comp)
            continue
        if i >= len(want):
            return None
        if any(c in comp for c in _GLOB_CHARS):
            if not _component_match(comp, want[i]):
                return None
            out.append(want[i])
        elif comp == want[i]:
            out.append(comp)
        else:
            return None
        i += 1
    return "/".join(out) if i == len(want) else None


def procps_decide(entries: Iterable[Entry], key: str, *, globs: bool = True,
                  glob_exclude: bool = True) -> Decision:
    """The value ``sysctl --system`` (procps-ng) leaves in ``key`` (normalised slash form),
    given entries from :func:`parse_procps` in file order (``write_setting_list``).

    Every line is written in order, so the last line that writes the key wins.  A glob line
    skips an expanded path when any line of any file has exactly that path (``strcmp``) or
    is an exclusion whose pattern matches it (``fnmatch`` without ``FNM_PATHNAME``: ``*``
    crosses ``/``; only with ``glob_exclude``, procps >= 4.0.5 — 4.0.2 compares exclusions
    with ``strcmp`` like any other line, as the oracle test shows).  Without glob support
    (procps < 4.0) a glob line is a literal path that does not exist.  Exclusion entries
    write nothing.
    """
    entries = list(entries)
    target = PROC_SYS + key
    paths = [PROC_SYS + e.key for e in entries]
    # linear in the entries: the paths as a set (strcmp), the exclusion patterns once, and
    # each distinct expansion checked against them once (not every line against every line)
    exact = set(paths)
    excl = ([p.replace("[^", "[!") for x, p in zip(entries, paths, strict=True)
             if x.value is None] if glob_exclude else [])
    skipped: dict[str, bool] = {}
    winner: Entry | None = None
    lost: list[Entry] = []
    for e, path in zip(entries, paths, strict=True):
        if e.value is None:
            continue
        if e.is_glob:
            if not globs:
                continue
            got = _glob_expand(path, target)
            if got is None:
                continue
            skip = skipped.get(got)
            if skip is None:
                skip = skipped[got] = got in exact or any(fnmatch_fast(got, p) for p in excl)
            if skip:
                continue
        elif (posixpath.normpath(path) if "//" in path or "/." in path or path.endswith("/")
              else path) != target:  # normpath changes nothing else (a hot loop)
            continue
        if winner is not None:
            lost.append(winner)
        winner = e
    if winner is None:
        return Decision(key, None, None, overridden=tuple(lost))
    return Decision(key, winner.value, winner, overridden=tuple(lost))


def normalize_value(value: str) -> str:
    """Whitespace-normalised value: ``/proc/sys`` prints fields separated by tabs,
    configuration files usually use spaces."""
    return " ".join(value.split())
