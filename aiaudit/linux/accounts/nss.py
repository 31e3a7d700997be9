# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Users and groups as the live system's programs resolve them: through NSS.

pam_limits, sshd, sudo and slurmd never read ``/etc/passwd`` themselves: they call
``getpwnam``, ``getgrnam``, ``getgrgid`` and ``getgrouplist`` (libpam
``pam_modutil_getpwnam``, ``pam_modutil_user_in_group_nam_nam``: primary gid, ``gr_mem``, then
``getgrouplist``), and glibc asks each source of ``nsswitch.conf`` in turn: the files, and on
a cluster ``sss``, ``ldap``, ``winbind``, ``extrausers``...  On the live ``/`` this module
asks the same functions, so a directory user is judged as its login is.

A source may ask a directory server that does not answer.  Each lookup therefore runs in a
daemon thread of its own and the caller waits at most :data:`Host.command_timeout`
(5 s by default, below the rule timeout, so the rule says what hung) and never past the scan
deadline; nothing is waited for under a lock.  A lookup that does not answer is abandoned
(Python cannot stop a thread) and the resolver gives up on NSS for the rest of the run:
later lookups fail at once instead of each waiting its own timeout.

``pwd`` and ``grp`` release the GIL while glibc works.  ``os.getgrouplist`` does not
(CPython 3.11 ``posixmodule.c``): a hung ``initgroups_dyn`` froze the whole process, the
runner's watchdog included (checked with libnss-extrausers reading a FIFO).  The group list
is therefore fetched with ``ctypes``, whose foreign calls release the GIL, and only when the
primary group and ``gr_mem`` have not already answered (pam_modutil's own order).

Only for the real ``/`` scanned live (:func:`live`): an image's NSS sources are not this
machine's, and nothing of a scanned root is ever loaded or run.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from aiaudit.core.errors import HostError
from aiaudit.linux.accounts.passwd import Account, Group

if TYPE_CHECKING:
    from aiaudit.core.host import Host

NGROUPS_CAP = 65536
"""Most groups asked of ``getgrouplist`` (Linux ``NGROUPS_MAX``)."""


class NssTimeout(HostError):
    """An NSS lookup did not answer in time (a directory server that hangs)."""


def live(host: Host) -> bool:
    """True when lookups go through this machine's NSS: the real ``/``, scanned live."""
    return host.is_real_root and host.live


class _Lookup:
    """One lookup running in its own daemon thread."""

    def __init__(self, what: str, fn: Callable[[], Any]) -> None:
        self.what = what
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.started = time.monotonic()
        threading.Thread(target=self._run, args=(fn,), name="aiaudit-nss",
                         daemon=True).start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.value = fn()
        except BaseException as exc:  # handed to the waiting caller
            self.error = exc
        finally:
            self.done.set()


class Resolver:
    """This machine's NSS, asked with a bound on every answer; answers are kept for the
    run (one lookup per question, even when several rules ask it).  It is the
    :class:`~aiaudit.linux.accounts.passwd.Directory` of a live :class:`Database
    <aiaudit.linux.accounts.passwd.Database>`."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._lock = threading.Lock()
        self._lookups: dict[tuple[Any, ...], _Lookup] = {}
        self.stuck: str | None = None
        """The lookup that did not answer (then NSS is not asked again this run)."""

    def limit(self) -> float:
        """Seconds one lookup may take: the command timeout, within the scan deadline."""
        limit = self.host.command_timeout
        remaining = self.host.deadline.remaining()
        return limit if remaining is None else min(limit, remaining)

    def ask(self, key: tuple[Any, ...], what: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` (run once per ``key``, in a daemon thread), waited for at most
        :meth:`limit` seconds from when it started; :class:`NssTimeout` past that."""
        with self._lock:
            lookup = self._lookups.get(key)
            if lookup is None:
                if self.stuck is not None:
                    raise NssTimeout(f"NSS did not answer {self.stuck}: {what} was not "
                                     "asked")
                lookup = self._lookups[key] = _Lookup(what, fn)
        limit = self.limit()
        if not lookup.done.wait(max(0.0, lookup.started + limit - time.monotonic())):
            with self._lock:
                self.stuck = self.stuck or f"{lookup.what} within {limit:g} s"
            raise NssTimeout(f"NSS did not answer {lookup.what} within {limit:g} s "
                             "(a directory server that does not respond?)")
        if lookup.error is not None:
            msg = str(lookup.error) if isinstance(lookup.error, HostError) else \
                f"NSS {lookup.what}: {type(lookup.error).__name__}: {lookup.error}"
            raise HostError(msg)
        return lookup.value

    # ---------------------------------------------------------------- lookups
    def passwd(self, name: str) -> Account | None:
        """``getpwnam(name)``; ``None`` when NSS knows no such user."""
        return self.ask(("pw", name), f"getpwnam({name!r})",  # type: ignore[no-any-return]
                        lambda: _getpwnam(name))

    def group(self, name: str) -> Group | None:
        """``getgrnam(name)``; ``None`` when NSS knows no such group."""
        return self.ask(("gr", name), f"getgrnam({name!r})",  # type: ignore[no-any-return]
                        lambda: _getgr(name))

    def group_by_gid(self, gid: int) -> Group | None:
        """``getgrgid(gid)``; ``None`` when NSS knows no such group."""
        return self.ask(("gid", gid), f"getgrgid({gid})",  # type: ignore[no-any-return]
                        lambda: _getgr(gid))

    def grouplist(self, name: str, gid: int) -> frozenset[int]:
        """``getgrouplist(name, gid)``: every gid of the user, ``gid`` included."""
        return self.ask(("gl", name, gid),  # type: ignore[no-any-return]
                        f"getgrouplist({name!r})", lambda: _getgrouplist(name, gid))


def resolver(host: Host) -> Resolver:
    """The run's resolver for ``host`` (one per run: answers and a hung source are
    shared by every rule)."""
    return host.memo(("nss-resolver",), lambda: Resolver(host))


# ------------------------------------------------------------------ in the lookup thread
def _getpwnam(name: str) -> Account | None:
    import pwd

    try:
        p = pwd.getpwnam(name)
    except (KeyError, ValueError):  # not found; a NUL in the name
        return None
    return Account(name, p.pw_uid, p.pw_gid, p.pw_dir, p.pw_shell, 0)


def _getgr(key: str | int) -> Group | None:
    import grp

    try:
        g = grp.getgrnam(key) if isinstance(key, str) else grp.getgrgid(key)
    except (KeyError, ValueError, OverflowError):
        return None
    return Group(g.gr_name, g.gr_gid, tuple(g.gr_mem), 0)


_GETGROUPLIST: list[Any] = []
"""libc's ``getgrouplist`` as a ctypes function, once loaded (ctypes is imported only when
a group list is needed)."""


def _getgrouplist(name: str, gid: int) -> frozenset[int]:
    """glibc ``getgrouplist`` through ctypes (released GIL), growing the buffer as asked."""
    import ctypes

    if not _GETGROUPLIST:
        fn = ctypes.CDLL(None, use_errno=True).getgrouplist
        fn.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_uint),
                       ctypes.POINTER(ctypes.c_int)]
        fn.restype = ctypes.c_int
        _GETGROUPLIST.append(fn)
    fn = _GETGROUPLIST[0]
    size = 64
    while True:
        buf = (ctypes.c_uint * size)()
        n = ctypes.c_int(size)
        if fn(name.encode("utf-8", "surrogateescape"), gid, buf, ctypes.byref(n)) >= 0:
            return frozenset(buf[:n.value])
        if n.value <= size or size >= NGROUPS_CAP:
            raise HostError(f"getgrouplist({name!r}) failed")
        size = min(n.value, NGROUPS_CAP)
