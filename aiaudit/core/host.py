# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""The :class:`Host`: the only code that touches the scanned machine.

Every path a check asks for is a path *as seen on the audited host* (``/etc/ssh/sshd_config``);
the Host joins it under the scan root and resolves symlinks itself, component by component,
so that an absolute link target is re-rooted (as a chroot would see it) and a link that climbs
above the root is refused (:class:`~aiaudit.core.errors.PathEscape`).  Only regular files are
opened, never FIFOs or devices (they could block or have side effects), reads are size-capped
and cached for the run, live state (``/proc``, ``/sys``) is read only in live mode, and commands
run only when the real ``/`` is scanned live, from the real system, with a timeout.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import signal
import stat
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence, TypeVar

from aiaudit.core.startup.records import record

if TYPE_CHECKING:
    import subprocess

from aiaudit.core.errors import (
    CommandError,
    HostError,
    LiveStateUnavailable,
    NotFound,
    NotRegularFile,
    PathEscape,
    SymlinkLoop,
    TooLarge,
)

DEFAULT_READ_CAP = 4 * 1024 * 1024
"""Largest file read by default (bytes).  Config files are far smaller; a 100 MB
``sysctl.conf`` is an error result, not a memory spike."""

CACHE_BUDGET = 16 * 1024 * 1024
"""Most bytes of file content the Host keeps cached per run.  Past it a file is still read
(up to its cap) but not kept: many files at the read cap cost their reads, not their sum
in memory (988 MB before on a hostile tree).  A scan's real files total well under 1 MiB."""

COMMAND_OUTPUT_CAP = 8 * 1024 * 1024
"""Most bytes of a command's standard output kept (its stderr: 64 KiB).  Output is read
as it comes; past the cap the command is killed and the rule gets an ``error`` result."""

MAX_PENDING_LSTATS = 4096
"""Most ``lstat`` results kept for a read that may follow (a walk that only asks whether
100,000 files exist must not keep 100,000 of them)."""

MAX_CACHED_GLOBS = 4096
"""Most glob patterns whose results :meth:`Host.glob` keeps for the run."""

MAX_SYMLINKS = 40
"""Same bound as the kernel's ``MAXSYMLINKS``: more hops is a loop (ELOOP)."""

LIVE_PREFIXES = ("/proc/", "/sys/")
"""Paths that hold live kernel state: only readable in live mode."""

TRUSTED_BIN_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""Where commands are looked up on the real system (never inside another root)."""

T = TypeVar("T")


@record
class _Raised:
    exc: Exception


_O_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY


@record
class CommandResult:
    """Outcome of a command run on the live host."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class Deadline:
    """A monotonic point in time after which the scan must stop waiting."""

    def __init__(self, seconds: float | None) -> None:
        self.at = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left (never negative), or ``None`` for no deadline."""
        if self.at is None:
            return None
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        """True once the deadline has passed."""
        return self.at is not None and time.monotonic() >= self.at


def _norm(path: str) -> list[str]:
    """Split a host path into components, dropping empty parts and ``.``."""
    return [p for p in path.split("/") if p and p != "."]


class Host:
    """Read-only, root-confined view of the audited system.

    ``root`` is the directory the audited system is mounted at (``/`` for this machine).
    ``live`` says whether ``/proc`` and ``/sys`` under that root hold state to read.
    """

    def __init__(
        self,
        root: str = "/",
        *,
        live: bool | None = None,
        read_cap: int = DEFAULT_READ_CAP,
        allow_commands: bool | None = None,
        command_timeout: float = 5.0,
        deadline: Deadline | None = None,
        image_kind: str | None = None,
        kernel_cmdline: str | None = None,
    ) -> None:
        real = os.path.realpath(root)
        if not os.path.isdir(real):
            raise NotFound(f"scan root {root!r} is not a directory")
        self.root = real
        """Real path of the scan root on this machine."""
        self.is_real_root = real == "/"
        """True when the scanned system is the one we run on."""
        self.live = self.is_real_root if live is None else live
        """Whether live state (/proc, /sys) may be read."""
        self.read_cap = read_cap
        self.allow_commands = (
            (self.is_real_root and self.live) if allow_commands is None else allow_commands
        )
        self.command_timeout = command_timeout
        self.deadline = deadline or Deadline(None)
        self.image_kind = image_kind
        """What the root is, as stated by the person scanning (``--image-kind``:
        ``bootable``, ``stateless``, ``container``); ``None``: detected from its files."""
        self.kernel_cmdline = kernel_cmdline
        """The kernel command line the scanned system boots with, as stated by the person
        scanning (``--kernel-cmdline``: a provisioner passes it, nothing in the root holds
        it); ``None``: the root's boot loader files (or ``/proc/cmdline``) say."""
        self._lock = threading.Lock()
        self._bytes: dict[str, bytes | HostError] = {}
        self._cached = 0
        self._globs: dict[str, tuple[str, ...]] = {}
        """Bytes of content in ``_bytes`` (bounded by :data:`CACHE_BUDGET`)."""
        self._resolved: dict[str, str | HostError] = {}
        self._memo: dict[object, Any] = {}
        """Key -> what its factory returned (or :class:`_Raised`); ``Any``: each key has
        its own type, which :meth:`memo`'s caller knows."""
        self._prefixes: dict[str, str] = {}
        self._lstats: dict[str, os.stat_result] = {}
        self._real_prefix = "" if self.is_real_root else self.root
        self.reads = 0
        """Number of files actually opened (cache misses); for tests and benchmarks."""

    def after_fork(self) -> None:
        """In a forked child (:mod:`aiaudit.core.worker`): a new lock, since a thread of the
        parent may have held the old one at the fork."""
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ memo
    def memo(self, key: object, factory: Callable[[], T]) -> T:
        """Per-run cache for data derived from the host (parsed configs shared by many
        rules): ``factory()`` runs once per key; its exception is cached and re-raised too.
        """
        with self._lock:
            if key in self._memo:
                hit = self._memo[key]
                if isinstance(hit, _Raised):
                    raise hit.exc
                return hit  # type: ignore[no-any-return]  # stored for this key by factory()
        try:
            value = factory()
        except Exception as exc:
            with self._lock:
                self._memo[key] = _Raised(exc)
            raise
        with self._lock:
            self._memo.setdefault(key, value)
            return self._memo[key]  # type: ignore[no-any-return]  # (no cast(): a call)

    # ----------------------------------------------------------------- paths
    @property
    def mode(self) -> str:
        """``live`` or ``offline``."""
        return "live" if self.live else "offline"

    def real(self, hostpath: str) -> str:
        """The path on this machine for an already-resolved host path."""
        if self.is_real_root:
            return hostpath
        return self.root + hostpath if hostpath != "/" else self.root

    def display(self, hostpath: str) -> str:
        """Host path as shown in evidence: relative to the root for files."""
        return hostpath.lstrip("/")

    def _check_live(self, path: str) -> None:
        """Refuse live state in an offline scan, and a path no file can have."""
        if not self.live and (path.startswith(LIVE_PREFIXES) or path in ("/proc", "/sys")):
            raise LiveStateUnavailable(f"{path}: live state is not read in an offline scan",
                                       path=path)
        if "\x00" in path:
            raise _nul_path(path)

    def resolve(self, path: str, *, strict: bool = True) -> str:
        """Resolve ``path`` (a host path) to a canonical host path, following symlinks
        inside the root.

        Raises :class:`PathEscape` if a ``..`` or a relative link climbs above the root,
        :class:`HostError` on a symlink loop, and with ``strict`` :class:`NotFound` when a
        component does not exist.  Without ``strict`` the missing tail is appended as is.
        """
        if not path.startswith("/"):
            raise HostError(f"{path!r}: host paths must be absolute")
        if "\x00" in path:
            raise _nul_path(path)
        key = f"{int(strict)}{path}"
        cached = self._resolved.get(key)
        if cached is not None:
            if isinstance(cached, HostError):
                raise cached
            return cached
        try:
            out = self._resolve(path, strict)
        except HostError as exc:
            self._resolved[key] = exc
            raise
        self._resolved[key] = out
        return out

    def _resolve(self, path: str, strict: bool) -> str:
        """The full walk: one component at a time from the root (or the longest prefix
        already resolved), each symlink's target put back in front of the rest (an
        absolute one from the root again), ``..`` never above the root."""
        fast = self._resolve_fast(path, strict)
        if fast is not None:
            return fast
        original = _norm(path)
        cacheable = ".." not in original
        start, done = self._resolved_prefix(original) if cacheable else (0, [])
        todo = original[start:]
        todo.reverse()
        left = len(todo)  # components of the original path still in todo
        hops = 0
        while todo:
            if len(todo) == left:
                left -= 1
            part = todo.pop()
            if part == "..":
                if not done:
                    raise PathEscape(f"{path}: '..' leads outside the scanned root", path=path)
                done.pop()
                continue
            cand = "/" + "/".join([*done, part])
            st = self._lstat_component(path, cand, strict)
            if st is None:  # absent, and not strict: the rest is appended as is
                done.append(part)
                done.extend(reversed(todo))
                return "/" + "/".join(done)
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > MAX_SYMLINKS:
                    raise SymlinkLoop(f"{path}: too many levels of symbolic links", path=path)
                target = self._link_target(path, cand)
                if target.startswith("/"):
                    done = []
                parts = _norm(target)
                parts.reverse()
                todo.extend(parts)
                continue
            done.append(part)
            if cacheable and len(todo) == left and (todo or stat.S_ISDIR(st.st_mode)):
                self._prefixes["/" + "/".join(original[:len(original) - left])] = \
                    "/" + "/".join(done)
        return "/" + "/".join(done)

    def _resolved_prefix(self, original: list[str]) -> tuple[int, list[str]]:
        """How many components of ``original`` (a path without ``..``) the longest
        already-resolved prefix covers, and what it resolved to: a directory walk (512
        CPUs x 10 idle states) then costs one lstat per new component, not one per
        component."""
        for j in range(len(original) - 1, 0, -1):
            hit = self._prefixes.get("/" + "/".join(original[:j]))
            if hit is not None:
                return j, _norm(hit)
        return 0, []

    def _lstat_component(self, path: str, cand: str, strict: bool) -> os.stat_result | None:
        """``lstat`` of ``cand`` (a component of the walk for ``path``): ``None`` when it
        does not exist and not ``strict``; a :class:`HostError` naming ``path`` else."""
        try:
            return os.lstat(self.real(cand))
        except FileNotFoundError:
            if strict:
                raise NotFound(f"{path}: no such file or directory", path=path) from None
            return None
        except NotADirectoryError:
            raise NotFound(f"{path}: a component is not a directory", path=path) from None
        except OSError as exc:
            raise HostError(f"{path}: {exc.strerror}", path=path) from None

    def _link_target(self, path: str, cand: str) -> str:
        """The target of symlink ``cand`` (a component of the walk for ``path``)."""
        try:
            return os.readlink(self.real(cand))
        except OSError as exc:
            raise HostError(f"{path}: {exc.strerror}", path=path) from None

    def _resolve_fast(self, path: str, strict: bool) -> str | None:
        """Resolve below the nearest already-resolved directory (a sysfs walk: 512 CPUs
        x 10 idle states) with one ``lstat`` per new component and no other work, as long
        as no component is a symlink and the path is plain (no ``.``, ``..``, ``//``);
        ``None`` sends everything else to the full walk, which decides (and errs) alike."""
        head, _, name = path.rpartition("/")
        pres = self._prefixes.get(head)
        if pres is not None and name and name != "." and name != "..":
            return self._fast_child(path, pres, name, strict)
        return self._fast_walk(path, strict)

    def _fast_child(self, path: str, pres: str, name: str, strict: bool) -> str | None:
        """The common case of :meth:`_resolve_fast`: the parent directory of ``path`` is
        already resolved (to ``pres``), ``name`` is its last component."""
        cand = (pres if pres != "/" else "") + "/" + name
        try:
            st = os.lstat(self._real_prefix + cand)
        except FileNotFoundError:
            if strict:
                raise NotFound(f"{path}: no such file or directory", path=path) from None
            return cand
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return None
        if stat.S_ISDIR(st.st_mode):
            self._prefixes[path] = cand
        elif len(self._lstats) < MAX_PENDING_LSTATS:  # for the read that follows
            self._lstats[cand] = st
        return cand

    def _fast_walk(self, path: str, strict: bool) -> str | None:
        """:meth:`_resolve_fast` from the nearest resolved ancestor (or the root), one
        ``lstat`` per component, each directory remembered as resolved."""
        prefixes = self._prefixes
        real = self._real_prefix
        names: list[str] = []
        head = path
        while True:
            head, _, name = head.rpartition("/")
            if not name or name == "." or name == "..":
                return None
            names.append(name)
            if not head:
                base = ""
                break
            pres = prefixes.get(head)
            if pres is not None:
                base = "" if pres == "/" else pres
                break
        n = len(names)
        for i in range(n - 1, -1, -1):
            cand = base + "/" + names[i]
            try:
                st = os.lstat(real + cand)
            except FileNotFoundError:
                if strict:
                    raise NotFound(f"{path}: no such file or directory", path=path) from None
                return cand + "".join("/" + names[j] for j in range(i - 1, -1, -1))
            except OSError:
                return None
            mode = st.st_mode
            if stat.S_ISLNK(mode):
                return None
            base = cand
            if i:
                if not stat.S_ISDIR(mode):
                    return None
                head = path.rsplit("/", i)[0]
                prefixes[head] = cand
        if stat.S_ISDIR(st.st_mode):
            prefixes[path] = base
        elif len(self._lstats) < MAX_PENDING_LSTATS:
            self._lstats[base] = st
        return base

    # --------------------------------------------------------------- queries
    def lstat(self, path: str) -> os.stat_result:
        """``lstat`` of ``path`` (its parent resolved, the last component not followed)."""
        self._check_live(path)
        parent, _, name = path.rstrip("/").rpartition("/")
        base = self.resolve(parent or "/")
        full = (base.rstrip("/") + "/" + name) if name else base
        try:
            return os.lstat(self.real(full))
        except FileNotFoundError:
            raise NotFound(f"{path}: no such file or directory", path=path) from None
        except OSError as exc:
            raise HostError(f"{path}: {exc.strerror}", path=path) from None

    def stat(self, path: str) -> os.stat_result:
        """``stat`` of ``path`` with symlinks followed inside the root."""
        self._check_live(path)
        real = self.real(self.resolve(path))
        try:
            return os.lstat(real)
        except FileNotFoundError:
            raise NotFound(f"{path}: no such file or directory", path=path) from None
        except OSError as exc:
            raise HostError(f"{path}: {exc.strerror}", path=path) from None

    def exists(self, path: str) -> bool:
        """True if ``path`` exists (symlinks followed inside the root).

        A link that escapes the root or loops counts as not existing.
        """
        try:
            self.stat(path)
        except HostError:
            return False
        return True

    def lstat_exists(self, path: str) -> bool:
        """True if ``path`` itself exists (a dangling symlink counts)."""
        try:
            self.lstat(path)
        except HostError:
            return False
        return True

    def is_dir(self, path: str) -> bool:
        """True if ``path`` is a directory (after following symlinks inside the root)."""
        try:
            return stat.S_ISDIR(self.stat(path).st_mode)
        except HostError:
            return False

    def is_file(self, path: str) -> bool:
        """True if ``path`` is a regular file (after following symlinks inside the root)."""
        try:
            return stat.S_ISREG(self.stat(path).st_mode)
        except HostError:
            return False

    def readlink(self, path: str) -> str | None:
        """The raw target of ``path`` if it is a symlink, else ``None``."""
        try:
            st = self.lstat(path)
        except HostError:
            return None
        if not stat.S_ISLNK(st.st_mode):
            return None
        parent, _, name = path.rstrip("/").rpartition("/")
        base = self.resolve(parent or "/")
        try:
            return os.readlink(self.real(base.rstrip("/") + "/" + name))
        except OSError:
            return None

    def is_masked(self, path: str) -> bool:
        """True if ``path`` is a symlink to ``/dev/null`` (systemd/udev masking)."""
        return self.readlink(path) == "/dev/null"

    def listdir(self, path: str, *, resolve_dirs: bool = False) -> list[str]:
        """Names in directory ``path``, sorted bytewise (``strcmp`` order); [] if absent.

        With ``resolve_dirs`` the subdirectories that are not symlinks (the directory
        entry's type, ``d_type``, or an ``lstat`` where the filesystem does not give it)
        are remembered as resolved, so that reading files below them costs one ``lstat``
        each, not one more per directory (every ``stateN`` of 512 CPUs)."""
        if "\x00" in path:
            return []  # absent: no directory has such a name
        self._check_live(path)
        try:
            resolved = self.resolve(path)
        except NotFound:
            return []
        real = self.real(resolved)
        parts = _norm(path)
        try:
            if resolve_dirs and ".." not in parts:
                key = "/" + "/".join(parts) + "/" if parts else "/"
                base = "/" if resolved == "/" else resolved + "/"
                prefixes = self._prefixes
                names = []
                with os.scandir(real) as entries:
                    for e in entries:
                        name = e.name
                        names.append(name)
                        try:
                            if e.is_dir(follow_symlinks=False):
                                prefixes[key + name] = base + name
                        except OSError:
                            pass
            else:
                names = os.listdir(real)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise HostError(f"{path}: {exc.strerror}", path=path) from None
        return _strcmp_sorted(names)

    def glob(self, pattern: str) -> list[str]:
        """Host paths matching a shell glob (``*?[``, per component, no dotfiles for
        wildcards), sorted bytewise.  Symlinks inside the root are followed.  Results are
        cached for the run (up to :data:`MAX_CACHED_GLOBS` patterns): a configuration that
        includes the same pattern 100,000 times walks it once."""
        hit = self._globs.get(pattern)
        if hit is not None:
            return list(hit)
        out = self._glob(pattern)
        if len(self._globs) < MAX_CACHED_GLOBS:
            self._globs[pattern] = tuple(out)
        return out

    def _glob(self, pattern: str) -> list[str]:
        parts = _norm(pattern)
        paths = ["/"]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            nxt: list[str] = []
            for base in paths:
                prefix = base.rstrip("/") + "/"
                if not any(c in part for c in "*?["):
                    cand = prefix + part
                    if (self.exists(cand) if last else self.is_dir(cand)):
                        nxt.append(cand)
                    continue
                try:
                    names = self.listdir(base)
                except HostError:
                    continue
                for name in names:
                    if name.startswith(".") and not part.startswith("."):
                        continue
                    if fnmatch.fnmatchcase(name, part):
                        cand = prefix + name
                        if last or self.is_dir(cand):
                            nxt.append(cand)
            paths = nxt
        return _strcmp_sorted(paths) if parts else []

    # ----------------------------------------------------------------- reads
    def read_bytes(self, path: str, *, cap: int | None = None) -> bytes:
        """Content of regular file ``path`` (cached for the run).

        Raises :class:`NotFound`, :class:`NotRegularFile`, :class:`TooLarge`,
        :class:`PathEscape`, :class:`LiveStateUnavailable` or :class:`HostError`.
        """
        self._check_live(path)
        limit = self.read_cap if cap is None else cap
        key = path
        cached = self._bytes.get(key)
        if cached is not None:
            if isinstance(cached, HostError):
                raise cached
            if len(cached) <= limit:
                return cached
        try:
            data = self._read(path, limit)
        except HostError as exc:
            with self._lock:
                self._bytes[key] = exc
            raise
        self._keep(key, data)
        return data

    def _keep(self, key: str, data: bytes) -> None:
        """Cache ``data`` for ``key`` while the cache is within :data:`CACHE_BUDGET`."""
        with self._lock:
            old = self._bytes.get(key)
            if isinstance(old, bytes):
                self._cached -= len(old)
                del self._bytes[key]
            if self._cached + len(data) <= CACHE_BUDGET:
                self._bytes[key] = data
                self._cached += len(data)

    def _read(self, path: str, limit: int) -> bytes:
        # the fast walk first, uncached: read_bytes caches the content itself
        resolved = (path.startswith("/") and self._resolve_fast(path, True)) \
            or self.resolve(path)
        real = self.real(resolved)
        st = self._lstats.pop(resolved, None)  # from the resolve just done: no 2nd lstat
        if st is None:
            try:
                st = os.lstat(real)
            except FileNotFoundError:
                raise NotFound(f"{path}: no such file or directory", path=path) from None
            except OSError as exc:
                raise HostError(f"{path}: {exc.strerror}", path=path) from None
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"{path}: not a regular file ({_kind(st.st_mode)})", path=path)
        if st.st_size > limit:
            raise TooLarge(f"{path}: {st.st_size} bytes, over the {limit}-byte read cap", path=path)
        return self._read_regular(path, real, limit)

    def _open_nofollow(self, path: str, real: str) -> int:
        """A descriptor of ``real`` opened without following a last symlink or blocking
        (``_O_FLAGS``), counted as a read; a failure is a :class:`HostError` naming
        ``path`` (:class:`NotFound` when the file is gone)."""
        try:
            fd = os.open(real, _O_FLAGS)
        except FileNotFoundError:
            raise NotFound(f"{path}: no such file or directory", path=path) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise HostError(f"{path}: changed into a symlink while reading",
                                path=path) from None
            raise HostError(f"{path}: {exc.strerror}", path=path) from None
        self.reads += 1
        return fd

    def _read_regular(self, path: str, real: str, limit: int) -> bytes:
        """Open ``real`` (an lstat just said: a regular file within the cap) without
        following a symlink or blocking, check it again on the descriptor, read it."""
        fd = self._open_nofollow(path, real)
        try:
            fst = os.fstat(fd)
            if not stat.S_ISREG(fst.st_mode):
                raise NotRegularFile(f"{path}: not a regular file ({_kind(fst.st_mode)})",
                                     path=path)
            want = 65536 if limit >= 65536 else limit + 1
            try:
                first = os.read(fd, want)
            except OSError as exc:
                raise HostError(f"{path}: {exc.strerror}", path=path) from None
            if 0 < len(first) == fst.st_size < want:
                # the whole file as its size says (an on-disk file): no read for EOF.
                # sysfs (size 4096) and procfs (size 0) files are read to EOF as any other
                return first
            if not first:
                return first
            chunks: list[bytes] = [first]
            total = len(first)
            if total > limit:
                raise TooLarge(f"{path}: over the {limit}-byte read cap", path=path)
            while True:
                try:
                    chunk = os.read(fd, min(65536, limit + 1 - total))
                except OSError as exc:
                    raise HostError(f"{path}: {exc.strerror}", path=path) from None
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise TooLarge(f"{path}: over the {limit}-byte read cap", path=path)
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        finally:
            os.close(fd)

    def _open_checked(self, path: str) -> tuple[int, os.stat_result]:
        """An open descriptor of regular file ``path`` (resolved inside the root, not
        following a last symlink, not blocking) and its ``fstat``; the caller closes it."""
        self._check_live(path)
        fd = self._open_nofollow(path, self.real(self.resolve(path)))
        try:
            st = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            raise HostError(f"{path}: {exc.strerror}", path=path) from None
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise NotRegularFile(f"{path}: not a regular file ({_kind(st.st_mode)})", path=path)
        return fd, st

    def read_range(self, path: str, offset: int, size: int) -> bytes:
        """At most ``size`` bytes of regular file ``path`` from ``offset`` (fewer at its
        end), read and never cached: a part of a big file (an ELF section of a kernel
        module) costs its own size in memory, not the file's."""
        if offset < 0 or size < 0:
            raise HostError(f"{path}: negative offset or size", path=path)
        fd, _st = self._open_checked(path)
        try:
            chunks = []
            while size > 0:
                try:
                    chunk = os.pread(fd, min(size, 1 << 20), offset)
                except OSError as exc:
                    raise HostError(f"{path}: {exc.strerror}", path=path) from None
                if not chunk:
                    break
                chunks.append(chunk)
                offset += len(chunk)
                size -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read_chunks(self, path: str, *, cap: int, chunk: int = 1 << 20) -> Iterator[bytes]:
        """Regular file ``path`` as successive chunks of at most ``chunk`` bytes, never
        cached (a compressed module streamed through its decompressor); more than ``cap``
        bytes in all raises :class:`TooLarge` (checked on the size first)."""
        fd, st = self._open_checked(path)
        try:
            if st.st_size > cap:
                raise TooLarge(f"{path}: {st.st_size} bytes, over the {cap}-byte read cap",
                               path=path)
            total = 0
            while True:
                try:
                    data = os.read(fd, chunk)
                except OSError as exc:
                    raise HostError(f"{path}: {exc.strerror}", path=path) from None
                if not data:
                    return
                total += len(data)
                if total > cap:
                    raise TooLarge(f"{path}: over the {cap}-byte read cap", path=path)
                yield data
        finally:
            os.close(fd)

    def read_kmsg(self, *, cap: int, max_records: int, block: int = 1 << 20
                  ) -> Iterator[bytes]:
        """The records of the running kernel's log buffer, oldest first, in ``/dev/kmsg``
        format, read as ``dmesg`` reads them: ``/dev/kmsg`` opened read-only and
        non-blocking (each reader has its own position: nothing is consumed or cleared),
        one ``read`` per record until ``EAGAIN`` (the newest).  Yields blocks of whole
        records (each record a line and its continuation lines, newline-terminated) of
        about ``block`` bytes: a record costs its ``read`` and one list append.

        Only on the real ``/`` in a live scan, and only from the kmsg character device
        (major 1, minor 11), never another file.  ``EPIPE`` (records overwritten while
        reading) skips ahead as the kernel does; reading stops quietly after ``cap``
        bytes, ``max_records`` records or the scan deadline.  Raises
        :class:`LiveStateUnavailable` elsewhere, :class:`NotRegularFile` when
        ``/dev/kmsg`` is not that device, :class:`HostError` when it cannot be opened
        (``EPERM``: ``kernel.dmesg_restrict`` without ``CAP_SYSLOG``)."""
        path = "/dev/kmsg"
        if not (self.is_real_root and self.live):
            raise LiveStateUnavailable(f"{path}: the running kernel's log is read only when "
                                       "scanning the real / live", path=path)
        try:
            fd = os.open(path, _O_FLAGS)
        except OSError as exc:
            raise HostError(f"{path}: {exc.strerror}", path=path) from None
        self.reads += 1
        try:
            st = os.fstat(fd)
            if not stat.S_ISCHR(st.st_mode) or (os.major(st.st_rdev), os.minor(st.st_rdev)) \
                    != (1, 11):
                raise NotRegularFile(f"{path}: not the kernel log device ({_kind(st.st_mode)})",
                                     path=path)
            yield from _kmsg_blocks(fd, path, cap, max_records, self.deadline, block)
        finally:
            os.close(fd)

    def read_many(self, paths: Iterable[str], *, cap: int | None = None
                  ) -> list[bytes | HostError]:
        """What :meth:`read_bytes` gives for each of ``paths``, the error in place of the
        content (an absent sysfs attribute is a :class:`NotFound` value, not an exception to
        unwind), with less work per file: a batch of small attributes (512 CPUs) costs its
        system calls and little else.  Same guarantees and the same cache: below a
        resolved directory (or one the fast walk resolves now) a file takes one ``lstat``
        (not a symlink, a regular file within the cap) and the checked open; anything else
        (a symlink on the way, ``..``, a special file, the cap, /sys in an offline scan)
        goes through :meth:`read_bytes` itself."""
        limit = self.read_cap if cap is None else cap
        cache = self._bytes
        out: list[bytes | HostError] = []
        add = out.append
        for path in paths:
            got = cache.get(path)
            if got is not None and (isinstance(got, HostError) or len(got) <= limit):
                add(got)
                continue
            got = self._read_fast(path, limit)
            if got is None:
                try:
                    add(self.read_bytes(path, cap=cap))
                except HostError as exc:
                    add(exc)
                continue
            # one dict store: atomic, no lock needed (a file of a batch is new here;
            # the byte count may be off by a file if a stuck thread reads meanwhile)
            if not isinstance(got, bytes):
                cache[path] = got
            elif self._cached + len(got) <= CACHE_BUDGET:
                cache[path] = got
                self._cached += len(got)
            add(got)
        return out

    def _read_fast(self, path: str, limit: int) -> bytes | HostError | None:
        """:meth:`read_many`'s short way for one path: its content or error when its
        directory is (or the fast walk now makes it) resolved and the file is a plain
        regular file within ``limit``; ``None`` for anything :meth:`read_bytes` must
        decide."""
        if (not self.live and path.startswith(LIVE_PREFIXES)) or "\x00" in path:
            return None  # read_bytes refuses it
        head, _, name = path.rpartition("/")
        pres = self._prefixes.get(head)
        if pres is None and head.startswith("/"):
            try:  # a new directory: the fast walk resolves (and remembers) it
                pres = self._resolve_fast(head, True) and self._prefixes.get(head)
            except NotFound:
                return NotFound(f"{path}: no such file or directory")
        if pres is None or not name or name == "." or name == "..":
            return None
        real = self._real_prefix + (pres if pres != "/" else "") + "/" + name
        try:
            st = os.lstat(real)
        except FileNotFoundError:
            return NotFound(f"{path}: no such file or directory")
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        try:
            return self._read_regular(path, real, limit)
        except HostError as exc:
            return exc

    def read_text(self, path: str, *, cap: int | None = None) -> str:
        """Content of ``path`` decoded as UTF-8 (undecodable bytes replaced)."""
        return self.read_bytes(path, cap=cap).decode("utf-8", errors="replace")

    def try_read_text(self, path: str) -> str | None:
        """Like :meth:`read_text` but ``None`` when the file does not exist."""
        try:
            return self.read_text(path)
        except NotFound:
            return None

    # -------------------------------------------------------------- commands
    def run(self, argv: Sequence[str], *, timeout: float | None = None) -> CommandResult:
        """Run a command of the real system (only when scanning ``/`` live).

        ``argv[0]`` is a bare program name looked up in :data:`TRUSTED_BIN_DIRS` of the real
        system.  The command gets an empty environment but ``PATH``/``LC_ALL=C``, runs in its
        own session and is killed (whole process group) at ``timeout`` or the scan deadline.
        """
        if not self.allow_commands:
            raise LiveStateUnavailable(
                f"{argv[0]}: commands run only when scanning the real / live"
            )
        if any("\x00" in a for a in argv):
            raise CommandError(f"{argv[0]}: an argument contains a NUL byte")
        exe = which(argv[0])
        if exe is None:
            raise CommandError(f"{argv[0]}: not installed")
        limit = self.command_timeout if timeout is None else timeout
        remaining = self.deadline.remaining()
        if remaining is not None:
            limit = min(limit, remaining)
        import subprocess  # only live scans of the real / run commands

        env = {"PATH": ":".join(TRUSTED_BIN_DIRS), "LC_ALL": "C"}
        try:
            proc = subprocess.Popen(
                [exe, *argv[1:]],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise CommandError(f"{argv[0]}: {exc.strerror}") from None
        try:
            out, err = _collect(proc, limit, COMMAND_OUTPUT_CAP, STDERR_CAP)
        except _OutputTooLarge:
            _kill_group(proc)
            raise CommandError(f"{' '.join(argv)}: output over the {COMMAND_OUTPUT_CAP}-"
                               "byte cap: the command was stopped") from None
        except TimeoutError:
            _kill_group(proc)
            raise CommandError(f"{' '.join(argv)}: timed out after {limit:.1f}s") from None
        return CommandResult(
            tuple(argv),
            proc.returncode,
            out.decode("utf-8", errors="replace"),
            err.decode("utf-8", errors="replace"),
        )


KMSG_RECORD_MAX = 16384
"""Read size per ``/dev/kmsg`` record: above the kernel's largest record (8 KiB,
``CONSOLE_EXT_LOG_MAX``); a smaller buffer gets ``EINVAL``."""


def _kmsg_blocks(fd: int, path: str, cap: int, max_records: int, deadline: Deadline,
                 block: int) -> Iterator[bytes]:
    """:meth:`Host.read_kmsg`'s loop over an open, non-blocking ``/dev/kmsg``."""
    got: list[bytes] = []
    add = got.append
    total = size = count = 0
    while count < max_records and total < cap:
        if count & 1023 == 1023 and deadline.expired():
            break
        try:
            rec = os.read(fd, KMSG_RECORD_MAX)
        except BlockingIOError:
            break  # EAGAIN: no newer record
        except InterruptedError:
            continue
        except BrokenPipeError:
            continue  # EPIPE: overwritten under us; the next read gives the oldest left
        except OSError as exc:
            raise HostError(f"{path}: {exc.strerror}", path=path) from None
        if not rec:
            break
        count += 1
        total += len(rec)
        size += len(rec)
        add(rec)
        if size >= block:
            yield b"".join(got)
            got.clear()
            size = 0
    if got:
        yield b"".join(got)


STDERR_CAP = 65536
"""Most bytes of a command's stderr kept (the rest is read and dropped)."""


class _OutputTooLarge(Exception):
    """A command wrote more than the output cap to its stdout."""


def _collect(proc: subprocess.Popen[bytes], timeout: float, out_cap: int, err_cap: int
             ) -> tuple[bytes, bytes]:
    """Read ``proc``'s stdout and stderr as they come (``select``), keeping at most
    ``out_cap`` bytes of stdout (more raises :class:`_OutputTooLarge`: nothing past the
    cap is ever held) and the first ``err_cap`` bytes of stderr; wait for its exit.
    Raises :class:`TimeoutError` at ``timeout`` seconds."""
    import selectors
    import subprocess

    end = time.monotonic() + timeout
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    sel = selectors.DefaultSelector()
    try:
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        while sel.get_map():
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError
            for key, _ in sel.select(left):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                buf = key.data
                if buf is out:
                    if len(out) + len(data) > out_cap:
                        raise _OutputTooLarge
                    out += data
                elif len(err) < err_cap:
                    err += data[:err_cap - len(err)]
    finally:
        sel.close()
        proc.stdout.close()
        proc.stderr.close()
    try:
        proc.wait(max(0.0, end - time.monotonic()))
    except subprocess.TimeoutExpired:  # output closed, process still there
        raise TimeoutError from None
    return bytes(out), bytes(err)


def _nul_path(path: str) -> NotFound:
    """The error for a path with a NUL byte (from a broken or hostile config file): no file
    has one, so it is absent, never an internal error."""
    return NotFound(f"{path!r}: no such file (a path cannot contain a NUL byte)")


def which(name: str) -> str | None:
    """Absolute path of ``name`` in the real system's trusted bin dirs, or ``None``."""
    if "/" in name:
        return name if name.startswith(TRUSTED_BIN_DIRS) and os.access(name, os.X_OK) else None
    for d in TRUSTED_BIN_DIRS:
        cand = os.path.join(d, name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    import subprocess

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.communicate(timeout=1)
    except (subprocess.TimeoutExpired, OSError):
        pass


def _strcmp_key(name: str) -> bytes:
    return name.encode("utf-8", errors="surrogateescape")


def _strcmp_sorted(names: list[str]) -> list[str]:
    """``names`` in bytewise order.  ASCII names sort the same as str (code points are
    the bytes), without encoding each one."""
    if all(n.isascii() for n in names):
        names.sort()
        return names
    return sorted(names, key=_strcmp_key)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"
