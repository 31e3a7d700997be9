"""The processes that hold sockets: ``/proc/<pid>/fd/*`` links read as ``socket:[inode]``
(proc(5)).

Without root other users' fd directories are unreadable and a socket's owner is unknown.
The walk is bounded (links read, seconds spent, the scan's deadline) and stops once every
socket asked about has an owner.  ``/proc`` is the scanner's own PID namespace.
"""

from __future__ import annotations

import time
from dataclasses import field

from aiaudit.core.errors import HostError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.network import procnet

MAX_FD_LINKS = 200_000
"""Most ``/proc/<pid>/fd`` links read to find socket owners (a large host has ~1e5)."""
MAX_OWNERS = 16
"""Processes named per socket (a socket shared by 200,000 processes is named by its first
16 and a count: listing them all took 668 MB)."""
CMDLINE_READ = 4096
"""Bytes of ``/proc/<pid>/cmdline`` read per owner (200 characters are shown)."""
OWNER_BUDGET_S = 5.0
"""Most seconds spent finding socket owners."""


@record
class Owner:
    """A process holding a socket."""

    pid: int
    comm: str
    cmdline: tuple[str, ...]

    def names(self) -> set[str]:
        """comm and the basenames of argv[0] and argv[1] (``python3 /usr/bin/tensorboard``)."""
        out = {self.comm}
        for a in self.cmdline[:2]:
            base = a.rsplit("/", 1)[-1]
            out.add(base)
            if base.endswith(".py"):
                out.add(base[:-3])
        return {n for n in out if n}

    def show(self) -> str:
        """``tensorboard[pid 123]``."""
        return f"{self.comm}[pid {self.pid}]"


@record
class Owners:
    """Socket owners found, and how complete the search was."""

    by_inode: dict[int, tuple[Owner, ...]]
    unreadable: int
    """Processes whose fd directory could not be read (other users without root)."""
    complete: bool
    """False when the search stopped at its bound."""
    more: dict[int, int] = field(default_factory=dict)
    """Inode -> how many more processes hold it than :data:`MAX_OWNERS` listed."""
    blind: tuple[Owner, ...] = ()
    """Processes whose fd directory was listed but whose links could not be read (even
    root is refused ``readlink`` on another user namespace's processes, e.g. a container
    runtime's init): any of them may hold a socket without an owner (at most
    :data:`MAX_OWNERS`)."""


@record(frozen=False)
class _Walk:
    """The state of one walk over ``/proc/<pid>/fd``."""

    want: dict[str, int]
    """``socket:[N]`` link target -> inode N."""
    pending: set[int]
    """Inodes without an owner so far."""
    found: dict[int, set[int]] = field(default_factory=dict)
    unreadable: int = 0
    links: int = 0
    blind: list[int] = field(default_factory=list)
    """Pids none of whose fd links could be read."""


def find_owners(host: Host, inodes: set[int]) -> Owners:
    """Processes holding the sockets ``inodes`` (``/proc/<pid>/fd/*`` -> ``socket:[N]``).

    The walk goes in pid order and stops after the process that owns the last socket
    without an owner so far: every socket gets the processes found up to there (the first
    is the one that opened it; forked workers that share it later are not listed).  A
    host with thousands of processes no longer reads every fd link of every process."""
    want = {f"socket:[{i}]": i for i in inodes if i}
    walk = _Walk(want, set(want.values()))
    complete = _walk(host, walk)
    owners: dict[int, tuple[Owner, ...]] = {}
    more: dict[int, int] = {}
    for inode, pset in walk.found.items():
        pids = sorted(pset)
        if len(pids) > MAX_OWNERS:
            more[inode] = len(pids) - MAX_OWNERS
        owners[inode] = tuple(_owner(host, pid) for pid in pids[:MAX_OWNERS])
    blind = tuple(_owner(host, pid) for pid in walk.blind[:MAX_OWNERS])
    return Owners(owners, walk.unreadable, complete, more, blind)


def _walk(host: Host, walk: _Walk) -> bool:
    """Read fd links in pid order until every wanted socket has an owner; False when a
    bound (links, time, the scan's deadline) stopped the walk first."""
    start = time.monotonic()
    try:
        pids = sorted((p for p in host.listdir("/proc") if p.isdigit()), key=int)
    except HostError:
        pids = []
    for pid in pids:
        if not walk.pending:
            break
        if walk.links > MAX_FD_LINKS or time.monotonic() - start > OWNER_BUDGET_S \
                or host.deadline.expired():
            return False
        try:
            fds = host.listdir(f"/proc/{pid}/fd")
        except HostError:
            walk.unreadable += 1
            continue
        refused = 0
        for fd in fds:
            walk.links += 1
            target = host.readlink(f"/proc/{pid}/fd/{fd}")
            refused += target is None
            if target in walk.want:
                walk.found.setdefault(walk.want[target], set()).add(int(pid))
                walk.pending.discard(walk.want[target])
        # every entry of fd/ is a link: none readable means readlink was refused (one
        # that fails alone is an fd closed meanwhile, such as the one listing fd/)
        if fds and refused == len(fds):
            walk.blind.append(int(pid))
    return True


def _owner(host: Host, pid: int) -> Owner:
    """A process's name and command line (``?`` and empty when unreadable)."""
    try:
        comm = host.read_text(f"/proc/{pid}/comm").strip()
    except HostError:
        comm = "?"
    try:
        raw = host.read_range(f"/proc/{pid}/cmdline", 0, CMDLINE_READ)
        cmd = tuple(a for a in raw.decode("utf-8", "replace").split("\0") if a)
    except HostError:
        cmd = ()
    return Owner(pid, comm, cmd)


def owner_text(s: procnet.Socket, owners: Owners) -> str:
    """Who holds ``s`` (``tensorboard[pid 123]``), or why that is unknown."""
    got = owners.by_inode.get(s.inode)
    if got:
        more = owners.more.get(s.inode, 0)
        return ", ".join(o.show() for o in got) + (f" and {more} more processes" if more
                                                   else "")
    if owners.unreadable:
        return "owner unknown (other users' processes are not readable; run as root)"
    if not owners.complete:
        return "owner unknown (search bound reached)"
    if owners.blind:
        who = ", ".join(o.show() for o in owners.blind[:3])
        more = len(owners.blind) - 3
        who += f" and {more} more" if more > 0 else ""
        return (f"owner unknown: the open files of {who} could not be read "
                "(readlink of /proc/PID/fd/* refused, even to root); the socket may be one "
                "of theirs")
    return "owner unknown (no process visible to the scanner holds it: another PID " \
        "namespace, or a kernel socket)"
