"""Every sysctl.d file of the scanned root, found, ordered and parsed once per run, as
systemd-sysctl and procps find them."""

from __future__ import annotations

import heapq
from dataclasses import field
from typing import Iterator

from aiaudit.core.errors import HostError, NotFound, NotRegularFile, ParseError, SymlinkLoop
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.core.startup.records import record
from aiaudit.linux.packages import dpkg
from aiaudit.linux.packages.installed import dpkg_version
from aiaudit.linux.sysctl import conf as sp


# ------------------------------------------------------------------ persisted config
@record
class SysctlConfig:
    """All sysctl configuration of the scanned root, parsed once per run."""

    files: tuple[str, ...]
    """The files systemd-sysctl reads, in its order (host paths)."""
    entries: tuple[sp.Entry, ...]
    """systemd-sysctl entries in processing order."""
    procps_entries: tuple[sp.Entry, ...]
    """``sysctl --system`` entries in processing order (``/etc/sysctl.conf`` last)."""
    procps_version: str | None
    procps_globs: bool
    problems: tuple[str, ...] = ()
    """Files that could not be read: the persisted value is unknown."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    procps_glob_exclude: bool = True
    """procps >= 4.0.5: ``-pattern`` exclusions stop globs by ``fnmatch``."""
    tuned_reapply_entries: tuple[sp.Entry, ...] = ()
    """What tuned re-applies after its profile (``reapply_sysctl``): ``/run/sysctl.d`` and
    ``/etc/sysctl.d`` (same basename: /run wins), then ``/etc/sysctl.conf``."""
    dirs: tuple[str, ...] = ()
    """The directories systemd-sysctl reads, in its order (split /usr: also /lib)."""
    procps_dirs: tuple[str, ...] = ()
    """The directories ``sysctl --system`` reads, in its order (then ``/etc/sysctl.conf``)."""
    problem_evidence: tuple[Evidence, ...] = ()
    """The files behind :attr:`problems` (each exists: it could not be read or parsed)."""


def _procps_variant(host: Host) -> tuple[str | None, tuple[str, ...], bool, bool]:
    """(version, directory order, glob support, glob exclusions) of the scanned root's
    procps.  Glob exclusions (``-net.ipv4.conf.*.rp_filter`` stopping other globs) came in
    4.0.5 (procps 39748b78); 4.0.2 only honours an exclusion spelled exactly as the path."""
    full = dpkg_version(host, "procps")
    if full is None:
        return None, sp.PROCPS4_DIRS, True, True
    version = dpkg.upstream_version(full)
    vt = dpkg.version_tuple(version)
    if vt >= (4,):
        return version, sp.PROCPS4_DIRS, True, vt >= (4, 0, 5)
    if (3, 3, 15) <= vt < (3, 3, 17):
        return version, sp.PROCPS_OLD_DIRS, False, False
    return version, sp.PROCPS4_DIRS, False, False


FILE_COST, LINE_COST = 2, 3
"""What one file and one kept line weigh against :data:`MAX_COST` (their memory: a file
costs its path and cached content, about 250 bytes; a line about 380 bytes)."""
MAX_COST = 525_000
"""Most sysctl.d files and lines kept per run, weighed by :data:`FILE_COST` and
:data:`LINE_COST` (a line two readers parse alike counts once): 105,000 one-line files or
175,000 lines in a few files, under the README's memory bound
(``tests/linux/sysctl/test_many_files.py``: 100,000 one-line files peak at 87 MB, 198,000
lines would take 100 MB).  A real root has a few hundred lines.  Past it the boot values
are unknown (every sysctl rule gets an ``error``), so that a tree of millions of lines
costs a bounded amount of memory, not gigabytes."""


class _Listing:
    """Every directory any of the three readers (systemd-sysctl, procps, tuned's re-apply)
    reads, listed once, and walked name by name in the order they all sort by (strcmp of
    the bytes: each listing is sorted so, and they are merged, not collected and sorted
    again: 100,000 names cost their listing, not three more copies)."""

    def __init__(self, host: Host, dirs: tuple[str, ...]) -> None:
        self.dirs = tuple(dict.fromkeys(dirs))
        self._names = [[n for n in host.listdir(d) if n.endswith(".conf")]
                       for d in self.dirs]

    def walk(self) -> Iterator[tuple[str, frozenset[str]]]:
        """(name, the directories holding it) for every ``*.conf`` name, in strcmp order."""
        streams = [_tagged(names, d) for d, names in zip(self.dirs, self._names, strict=True)]
        name: str | None = None
        held: list[str] = []
        for n, d in heapq.merge(*streams, key=_strcmp_key):
            if n != name:
                if name is not None:
                    yield name, frozenset(held)
                name, held = n, []
            held.append(d)
        if name is not None:
            yield name, frozenset(held)


def _tagged(names: list[str], d: str) -> Iterator[tuple[str, str]]:
    return ((n, d) for n in names)


def _strcmp_key(item: tuple[str, str]) -> bytes:
    """Sort key of a (name, dir) pair: the name's bytes, as strcmp compares them."""
    return item[0].encode("utf-8", "surrogateescape")


def _first(dirs: tuple[str, ...], held: frozenset[str], name: str) -> str | None:
    """The path of ``name`` in the first of ``dirs`` that holds it (``conf_files_list``:
    the first directory holding a basename wins)."""
    for d in dirs:
        if d in held:
            return f"{d.rstrip('/')}/{name}"
    return None


class _Files:
    """Reads each sysctl file once and parses it for every reader that uses it (systemd-
    sysctl, procps, tuned's re-apply mostly read the same files), collecting what could not
    be used and why.  Files are visited in name order, which is every reader's order, so
    each reader's entries are appended in its own processing order; a file procps parses
    to the same lines as systemd-sysctl shares systemd's entries (one copy in memory)."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.problems: list[str] = []
        """Files systemd-sysctl reads that could not be read: the boot value is unknown."""
        self.problem_ev: list[Evidence] = []
        self.notes: list[str] = []
        self.files: list[str] = []
        self.entries: list[sp.Entry] = []
        self.procps: list[sp.Entry] = []
        self.tuned: list[sp.Entry] = []
        self.cost = 0
        """Files and lines kept, weighed (a line two readers share counts once)."""
        self.lines = 0
        self.full = False
        """:data:`MAX_COST` reached: nothing more is read."""

    def add(self, spath: str | None, ppath: str | None, tpath: str | None) -> None:
        """One basename: the path systemd-sysctl (``spath``), procps (``ppath``) and tuned
        (``tpath``) read for it, each ``None`` when that reader skips the name."""
        sys_entries: list[sp.Entry] = []
        text: str | None = None
        self.cost += FILE_COST
        if self.cost > MAX_COST:
            self._stop(spath or ppath or tpath or "?")
            return
        if spath is not None:
            self.files.append(spath)
            text, sys_entries = self._systemd(spath)
            self._extend(self.entries, sys_entries, spath)
        if ppath is not None and not self.full:
            if ppath == spath:  # same file: systemd's reading decided whether it is usable
                pe = [] if text is None else sp.parse_procps(
                    text, ppath, limit=max(self._left(), len(sys_entries)))
                if pe == sys_entries:
                    self._extend(self.procps, sys_entries, ppath, shared=True)
                else:
                    self._extend(self.procps, pe, ppath)
            else:
                self._extend(self.procps, self._only(ppath, procps=True), ppath)
        if tpath is not None and not self.full:
            if tpath == spath:  # systemd reads it too: its verdict stands
                self._extend(self.tuned, sys_entries, tpath, shared=True)
            else:
                self._extend(self.tuned, self._only(tpath, procps=False), tpath)

    def _left(self) -> int:
        """How many more lines :data:`MAX_COST` allows."""
        return max(0, (MAX_COST - self.cost) // LINE_COST)

    def _extend(self, out: list[sp.Entry], entries: list[sp.Entry], path: str,
                shared: bool = False) -> None:
        """Append ``entries`` to one reader's list; ``shared``: they are already kept
        (another reader's), so they cost no more of :data:`MAX_COST`."""
        if self.full or not entries:
            return
        if not shared and self.cost + len(entries) * LINE_COST > MAX_COST:
            self._stop(path)
            return
        if not shared:
            self.cost += len(entries) * LINE_COST
            self.lines += len(entries)
        out += entries

    def _stop(self, path: str) -> None:
        """The tree is past :data:`MAX_COST`: nothing more is read, the boot values are
        unknown."""
        self.full = True
        msg = (f"sysctl.d tree too large to evaluate (stopped at {path}; files read: "
               f"{len(self.files):,}, lines kept: {self.lines:,}; at most about "
               f"{MAX_COST // (FILE_COST + LINE_COST):,} one-line files or "
               f"{MAX_COST // LINE_COST:,} lines are read): the boot values are not known")
        self.problems.append(msg)
        self.problem_ev.append(Evidence.file(path, None, msg))

    def _systemd(self, path: str) -> tuple[str | None, list[sp.Entry]]:
        """(text, entries) of a file systemd-sysctl reads; ``None`` text when it is masked
        or unusable (a note, or a problem: the boot value is unknown)."""
        if self.host.is_masked(path):
            self.notes.append(f"{path} is masked (symlink to /dev/null)")
            return None, []
        try:
            text = self.host.read_text(path)
            return text, sp.parse(text, path, limit=self._left())[0]
        except (NotRegularFile, SymlinkLoop) as exc:
            self.notes.append(f"{exc}; systemd-sysctl cannot use it either")
        except NotFound:
            self.notes.append(f"{path}: dangling symlink, ignored")
        except (HostError, ParseError) as exc:
            self.problems.append(str(exc))
            self.problem_ev.append(_problem_evidence(path, exc))
        return None, []

    def _only(self, path: str, *, procps: bool) -> list[sp.Entry]:
        """The entries of a file that only procps (``procps``) or only tuned's re-apply
        reads: an unusable file is a note, never a problem (the boot value is still known)."""
        if procps and self.host.is_masked(path):
            return []
        try:
            text = self.host.read_text(path)
            if procps:
                return sp.parse_procps(text, path, limit=self._left())
            return sp.parse(text, path, limit=self._left())[0]
        except (NotRegularFile, SymlinkLoop, NotFound) as exc:
            if not procps:  # procps skips such a file as systemd-sysctl would
                self.notes.append(f"{exc}; only tuned's reapply_sysctl reads it")
        except (HostError, ParseError) as exc:
            who = "`sysctl --system`" if procps else "tuned's reapply_sysctl"
            self.notes.append(f"{exc}; only {who} reads it")
        return []


def load_config(host: Host) -> SysctlConfig:
    """Find, order and parse every sysctl.d file of the scanned root (uncached: see
    :func:`loaded` for the run's shared copy)."""
    split_usr = host.readlink("/lib") is None and host.is_dir("/lib/sysctl.d")
    dirs = sp.SYSTEMD_DIRS_SPLIT_USR if split_usr else sp.SYSTEMD_DIRS
    version, pdirs, globs, glob_exclude = _procps_variant(host)
    listing = _Listing(host, (*dirs, *pdirs, *TUNED_REAPPLY_DIRS))
    fs = _Files(host)
    for name, held in listing.walk():
        if fs.full:
            break
        hidden = name.startswith(".")  # procps PreloadSystem keeps dotfiles, the others not
        fs.add(None if hidden else _first(dirs, held, name), _first(pdirs, held, name),
               None if hidden else _first(TUNED_REAPPLY_DIRS, held, name))
    if host.is_file(sp.SYSCTL_CONF) and not fs.full:
        # procps reads it last; so does tuned's re-apply (never systemd-sysctl itself)
        fs.add(None, sp.SYSCTL_CONF, sp.SYSCTL_CONF)
    cfg = SysctlConfig(tuple(fs.files), tuple(fs.entries), tuple(fs.procps), version, globs,
                       tuple(fs.problems), tuple(fs.notes), glob_exclude, tuple(fs.tuned),
                       dirs, pdirs, tuple(fs.problem_ev))
    # The Host caches a read's error with its traceback, whose frames keep this frame,
    # and so its locals, alive for the run: drop the lists the config has copied (with
    # 100,000 files, 10 MB of names and lines kept twice).
    del fs, listing
    return cfg


def loaded(host: Host) -> SysctlConfig:
    """The run's :class:`SysctlConfig` (:func:`load_config` once per run, per Host).

    Rules that ask while it is being read wait for that reading instead of starting their
    own: on a tree of 100,000 files whose reading outlasts a rule's timeout, the abandoned
    rule's thread goes on reading, and a second reading beside it doubled the peak memory
    (132 MB observed with the default 20 s rule timeout on a loaded machine, against 80 MB
    for one reading; ``tests/linux/sysctl/test_many_files.py``)."""
    import threading

    with host.memo(("sysctl-config-lock",), threading.Lock):
        return host.memo(("sysctl-config",), lambda: load_config(host))


def _problem_evidence(path: str, exc: Exception) -> Evidence:
    """The file (it exists) that made the persisted value unknown, with the problem as its
    value: the line of a parse error, else the file."""
    line = exc.line if isinstance(exc, ParseError) else None
    msg = str(exc)
    for prefix in (f"{path}:{line}: ", f"{path}: ", f"line {line}: "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
            break
    return Evidence.file(path, line, msg)


TUNED_REAPPLY_DIRS = ("/run/sysctl.d", "/etc/sysctl.d")
"""tuned ``plugins/plugin_sysctl.py`` ``SYSCTL_CONFIG_DIRS``, in its priority order."""
