"""The listening sockets of the scanner's network namespace reachable from the network.

Every TCP socket in LISTEN and every bound, unconnected UDP socket of
``/proc/net/{tcp,tcp6,udp,udp6}`` (:mod:`.procnet`) on an address other than loopback.
Sockets are live kernel state: an offline scan of a root filesystem cannot see them.
``/proc/net`` is the scanner's own network namespace; containers in other namespaces are
not seen.  Their owners come from :mod:`.owners`, one bounded walk per run.
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Evidence, Result, Status
from aiaudit.core.startup.records import record
from aiaudit.linux.network import procnet
from aiaudit.linux.network.owners import Owners, find_owners

TABLES = (("tcp", 4, "/proc/net/tcp"), ("tcp", 6, "/proc/net/tcp6"),
          ("udp", 4, "/proc/net/udp"), ("udp", 6, "/proc/net/udp6"))


@record
class Sockets:
    """All sockets of the scanner's network namespace."""

    sockets: tuple[procnet.Socket, ...]
    sources: dict[tuple[str, int], str]
    problems: tuple[str, ...]


def load_sockets(host: Host) -> Sockets:
    """Parse the four /proc/net tables (missing IPv6 tables are fine: IPv6 disabled)."""
    out: list[procnet.Socket] = []
    problems: list[str] = []
    for proto, fam, path in TABLES:
        try:
            out += procnet.parse(host.read_text(path), proto, fam)
        except NotFound:
            continue
        except (HostError, ParseError) as exc:
            problems.append(f"{path}: {exc}")
    return Sockets(tuple(out), {(p, f): path for p, f, path in TABLES}, tuple(problems))


def exposed(socks: Sockets, udp: bool = True) -> list[procnet.Socket]:
    """Listening sockets on non-loopback addresses, one per (proto, address, port)."""
    seen: set[tuple[str, str, int]] = set()
    out = []
    for s in socks.sockets:
        if not s.listening or s.loopback or (s.proto == "udp" and not udp):
            continue
        key = (s.proto, str(s.local), s.port)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def start(host: Host, what: str) -> tuple[Sockets | None, list[Result]]:
    """The sockets, once per run (``None`` offline), and the results to yield first: a
    skip offline, an error per table that cannot be read."""
    if not host.live:
        return None, [Result(Status.SKIP, what, "listening sockets are live kernel state; "
                             "an offline scan of a root filesystem cannot see them")]
    socks = host.memo(("net-sockets",), lambda: load_sockets(host))
    return socks, [Result(Status.ERROR, prob.split(":", 1)[0], f"cannot read sockets: {prob}",
                          aspect=Aspect.RUNTIME) for prob in socks.problems]


def owners_for(host: Host, socks: Sockets) -> Owners:
    """Owners of every non-loopback listening socket: one bounded /proc walk per run,
    shared by the rules."""
    inodes = {s.inode for s in exposed(socks)}
    return host.memo(("net-owners",), lambda: find_owners(host, inodes))


def addr_text(s: procnet.Socket) -> str:
    """``0.0.0.0``, ``[::]``: the local address as subjects and messages show it."""
    return str(s.local) if s.local.version == 4 else f"[{s.local}]"


def socket_evidence(socks: Sockets, s: procnet.Socket, owners: Owners
                    ) -> tuple[Evidence, ...]:
    """The table row of ``s`` and the fd link of each owner."""
    path = socks.sources[(s.proto, s.family)]
    ev = [Evidence.runtime(f"{path}:{s.line}",
                           f"{s.endpoint()} state {s.state:02X} inode {s.inode}")]
    for o in owners.by_inode.get(s.inode, ()):
        ev.append(Evidence.runtime(f"/proc/{o.pid}/fd", f"socket:[{s.inode}] {o.show()} "
                                   + " ".join(o.cmdline)[:200]))
    return tuple(ev)


def tables_evidence() -> tuple[Evidence, ...]:
    """The four tables read (the evidence of a pass)."""
    return tuple(Evidence.runtime(path) for _p, _f, path in TABLES)


def ss_command(s: procnet.Socket) -> str:
    """The ``ss`` command that shows the socket and its process: a diagnosis, and it says
    so (a trailing ``# diagnosis:`` comment, which reports label as such, see
    :func:`aiaudit.remediate.grouping.is_diagnosis`)."""
    return (f"ss -{'t' if s.proto == 'tcp' else 'u'}lpn 'sport = :{s.port}'  "
            "# diagnosis: which process holds the port (changes nothing)")
