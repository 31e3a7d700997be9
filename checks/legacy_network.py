"""Network exposure: listening sockets reachable from the network.

``network.listening_ports``: every TCP socket in LISTEN and every bound, unconnected UDP
socket of ``/proc/net/{tcp,tcp6,udp,udp6}`` on an address other than loopback must be on a
port the rule allows.  ``network.exposed_services``: such sockets of well-known ML and ops
services (Jupyter, TensorBoard, Ray, MLflow, Docker API, DCGM ... from
``data/network_services.yaml``) are reported by name.  Both are live-only: sockets are
kernel state.  The owning process comes from ``/proc/<pid>/fd/*`` links
(``socket:[inode]``), looked up only for the offending sockets' inodes and bounded; without
root other users' fd directories are unreadable and the owner is "unknown".
``/proc/net`` is the scanner's own network namespace; containers in other namespaces are
not seen.
"""

from __future__ import annotations

import time
from dataclasses import field
from typing import Any, Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.records import record
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.network import procnet

TABLES = (("tcp", 4, "/proc/net/tcp"), ("tcp", 6, "/proc/net/tcp6"),
          ("udp", 4, "/proc/net/udp"), ("udp", 6, "/proc/net/udp6"))

MAX_FD_LINKS = 200_000
"""Most ``/proc/<pid>/fd`` links read to find socket owners (a large host has ~1e5)."""
MAX_OWNERS = 16
"""Processes named per socket (a socket shared by 200,000 processes is named by its first
16 and a count: listing them all took 668 MB)."""
CMDLINE_READ = 4096
"""Bytes of ``/proc/<pid>/cmdline`` read per owner (200 characters are shown)."""
OWNER_BUDGET_S = 5.0
"""Most seconds spent finding socket owners."""

_ALLOWED = {"type": "array", "items": {"type": "string", "pattern": nf.PORT_SPEC_PATTERN},
            "default": ["22/tcp"],
            "description": "ports that may listen on non-loopback addresses (22/tcp, "
                           "60000-61000/udp)"}
_FW_AWARE = {"type": "boolean", "default": False,
             "description": "pass a socket the running firewall provably drops new "
                            "connections to (for every address family it accepts)"}

LISTEN_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "allowed": _ALLOWED,
        "udp": {"type": "boolean", "default": True, "description": "also check UDP sockets"},
        "firewall_aware": _FW_AWARE,
    },
}
SERVICES_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "ignore": {"type": "array", "items": {"type": "string"}, "default": [],
                   "description": "service names (as in the table) accepted on this host"},
        "firewall_aware": _FW_AWARE,
    },
}


# ------------------------------------------------------------------ sockets
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


def find_owners(host: Host, inodes: set[int]) -> Owners:
    """Processes holding the sockets ``inodes`` (``/proc/<pid>/fd/*`` -> ``socket:[N]``).

    The walk goes in pid order and stops after the process that owns the last socket
    without an owner so far: every socket gets the processes found up to there (the first
    is the one that opened it; forked workers that share it later are not listed).  A
    host with thousands of processes no longer reads every fd link of every process."""
    want = {f"socket:[{i}]": i for i in inodes if i}
    pending = set(want.values())
    found: dict[int, set[int]] = {}
    unreadable = 0
    links = 0
    start = time.monotonic()
    complete = True
    try:
        pids = sorted((p for p in host.listdir("/proc") if p.isdigit()), key=int)
    except HostError:
        pids = []
    for pid in pids:
        if not pending:
            break
        if links > MAX_FD_LINKS or time.monotonic() - start > OWNER_BUDGET_S \
                or host.deadline.expired():
            complete = False
            break
        try:
            fds = host.listdir(f"/proc/{pid}/fd")
        except HostError:
            unreadable += 1
            continue
        for fd in fds:
            links += 1
            target = host.readlink(f"/proc/{pid}/fd/{fd}")
            if target in want:
                found.setdefault(want[target], set()).add(int(pid))
                pending.discard(want[target])
    owners: dict[int, tuple[Owner, ...]] = {}
    more: dict[int, int] = {}
    for inode, pset in found.items():
        got = []
        pids_sorted = sorted(pset)
        if len(pids_sorted) > MAX_OWNERS:
            more[inode] = len(pids_sorted) - MAX_OWNERS
        for pid in pids_sorted[:MAX_OWNERS]:
            try:
                comm = host.read_text(f"/proc/{pid}/comm").strip()
            except HostError:
                comm = "?"
            try:
                raw = host.read_range(f"/proc/{pid}/cmdline", 0, CMDLINE_READ)
                cmd = tuple(a for a in raw.decode("utf-8", "replace").split("\0") if a)
            except HostError:
                cmd = ()
            got.append(Owner(pid, comm, cmd))
        owners[inode] = tuple(got)
    return Owners(owners, unreadable, complete, more)


def owners_for(host: Host, socks: Sockets) -> Owners:
    """Owners of every non-loopback listening socket: one bounded /proc walk per run,
    shared by the rules."""
    inodes = {s.inode for s in exposed(socks)}
    return host.memo(("net-owners",), lambda: find_owners(host, inodes))


def _owner_text(s: procnet.Socket, owners: Owners) -> str:
    got = owners.by_inode.get(s.inode)
    if got:
        more = owners.more.get(s.inode, 0)
        return ", ".join(o.show() for o in got) + (f" and {more} more processes" if more
                                                   else "")
    if owners.unreadable:
        return "owner unknown (other users' processes are not readable; run as root)"
    if not owners.complete:
        return "owner unknown (search bound reached)"
    return "owner unknown (no process visible to the scanner holds it: another PID " \
        "namespace, or a kernel socket)"


def _addr_text(s: procnet.Socket) -> str:
    return str(s.local) if s.local.version == 4 else f"[{s.local}]"


def _families(host: Host, s: procnet.Socket) -> tuple[int, ...]:
    """Address families that reach the socket: a ``::`` socket also takes IPv4 unless
    ``net.ipv6.bindv6only`` is 1 (ipv6(7); a socket's own IPV6_V6ONLY is not visible in
    /proc, so the conservative answer is both)."""
    if s.local.version == 4:
        return (4,)
    if not s.wildcard:
        return (6,)
    try:
        v6only = host.read_text("/proc/sys/net/ipv6/bindv6only").strip() == "1"
    except HostError:
        v6only = False
    return (6,) if v6only else (4, 6)


def _firewall_note(host: Host, s: procnet.Socket) -> tuple[bool, str]:
    """(dropped, note): does the running firewall drop new connections to ``s``?"""
    from aiaudit.checks import legacy_firewall as firewall

    try:
        live = firewall.running(host)
    except HostError as exc:
        return False, f" (running firewall unknown: {exc})"
    if live.ruleset is None:
        return False, ""
    outs = [nf.decide(live.ruleset, nf.Probe(f, s.proto, s.port)).outcome
            for f in _families(host, s)]
    if all(o is nf.Outcome.DROP for o in outs):
        return True, " but the running firewall drops new connections to it"
    return False, ""


def _evidence(socks: Sockets, s: procnet.Socket, owners: Owners) -> tuple[Evidence, ...]:
    path = socks.sources[(s.proto, s.family)]
    ev = [Evidence.runtime(f"{path}:{s.line}",
                           f"{s.endpoint()} state {s.state:02X} inode {s.inode}")]
    for o in owners.by_inode.get(s.inode, ()):
        ev.append(Evidence.runtime(f"/proc/{o.pid}/fd", f"socket:[{s.inode}] {o.show()} "
                                   + " ".join(o.cmdline)[:200]))
    return tuple(ev)


def _start(host: Host, what: str) -> tuple[Sockets | None, list[Result]]:
    """The sockets (``None`` offline) and the results to yield first (skip, errors)."""
    if not host.live:
        return None, [Result(Status.SKIP, what, "listening sockets are live kernel state; "
                             "an offline scan of a root filesystem cannot see them")]
    socks = host.memo(("net-sockets",), lambda: load_sockets(host))
    return socks, [Result(Status.ERROR, prob.split(":", 1)[0], f"cannot read sockets: {prob}",
                          aspect=Aspect.RUNTIME) for prob in socks.problems]


# ------------------------------------------------------------------ check: ports
def run_listening(ctx: CheckContext) -> Iterator[Result]:
    """Every non-loopback listening socket is on an allowed port."""
    host, p = ctx.host, ctx.params
    socks, first = _start(host, "listening sockets")
    yield from first
    if socks is None:
        return
    allowed = nf.parse_port_specs(p["allowed"])
    allowed_txt = ", ".join(p["allowed"]) or "none"
    bad = [s for s in exposed(socks, p["udp"]) if not nf.port_allowed(allowed, s.proto,
                                                                        s.port)]
    # only an unexpected listener needs its owner named: no walk of /proc otherwise
    owners = owners_for(host, socks) if bad else Owners({}, 0, True)
    for s in bad:
        subject = f"{s.port}/{s.proto} {_addr_text(s)}"
        who = _owner_text(s, owners)
        dropped, note = _firewall_note(host, s) if p["firewall_aware"] else (False, "")
        msg = f"{s.port}/{s.proto} listening on {_addr_text(s)}, {who}{note}"
        if dropped:
            yield Result(Status.PASS, subject, msg, expected=f"only {allowed_txt}",
                         actual=s.endpoint(), aspect=Aspect.RUNTIME,
                         evidence=_evidence(socks, s, owners))
            continue
        names = sorted({o.comm for o in owners.by_inode.get(s.inode, ())})
        yield Result(
            Status.FAIL, subject, msg + f"; allowed: {allowed_txt}",
            expected=f"only {allowed_txt} on non-loopback addresses", actual=s.endpoint(),
            aspect=Aspect.RUNTIME, evidence=_evidence(socks, s, owners),
            remediation=Remediation(
                f"Bind {' / '.join(names) or 'the service'} to 127.0.0.1 (or a private "
                f"interface) or stop it; if {s.port}/{s.proto} must be reachable, add it to "
                "the rule's allowed list and admit it in the firewall.",
                (Snippet.command(f"ss -{'t' if s.proto == 'tcp' else 'u'}lpn "
                                 f"'sport = :{s.port}'", "show the socket and its process"),)),
            data={"proto": s.proto, "address": str(s.local), "port": s.port,
                  "pids": [o.pid for o in owners.by_inode.get(s.inode, ())]})
    if not bad and not socks.problems:
        n = len(exposed(socks, p["udp"]))
        yield Result(Status.PASS, "listening sockets",
                     f"{n} non-loopback listening socket(s), all on allowed ports "
                     f"({allowed_txt})", expected=f"only {allowed_txt}", aspect=Aspect.RUNTIME,
                     evidence=tuple(Evidence.runtime(path) for _p, _f, path in TABLES))


# ------------------------------------------------------------------ check: services
@record
class Service:
    """One entry of the service table."""

    name: str
    proto: str
    ports: tuple[tuple[int, int], ...]
    processes: frozenset[str]
    any_port: bool
    requires_process: bool
    risk: str
    fix: str
    reference: str


SERVICES_DATA = "data/network_services.yaml"
"""The service table (package data of ``aiaudit.checks``); its JSON twin
``network_services.json`` is written by ``python -m aiaudit.core.ruleset.builtin checks/data``."""


def _services_data() -> Any:
    """The parsed service table: the JSON twin when it matches the YAML bytes (no PyYAML
    import, about 15 ms of a scan), else the YAML itself."""
    from aiaudit.core import resources
    from aiaudit.core.ruleset.builtin import fingerprint

    raw = resources.read_bytes("aiaudit.checks", SERVICES_DATA)
    twin = SERVICES_DATA[: -len(".yaml")] + ".json"
    if resources.exists("aiaudit.checks", twin):
        import json

        doc = json.loads(resources.read_text("aiaudit.checks", twin))
        if doc.get("source_crc32") == fingerprint(raw):
            return doc["data"]
    import yaml

    return yaml.load(raw.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_services() -> tuple[Service, ...]:
    """The service table shipped as ``aiaudit.checks`` data ``network_services.yaml``."""
    out = []
    for e in _services_data()["services"]:
        ports = tuple((p[0], p[1]) if isinstance(p, list) else (p, p) for p in e["ports"])
        out.append(Service(e["name"], e.get("proto", "tcp"), ports,
                           frozenset(e.get("processes", ())), bool(e.get("any_port")),
                           bool(e.get("requires_process")), e.get("risk", ""), e.get("fix", ""),
                           e.get("reference", "")))
    return tuple(out)


def identify(services: tuple[Service, ...], proto: str, port: int,
             owners: tuple[Owner, ...], owner_known: bool) -> Service | None:
    """The service a socket belongs to: by port (and owner name where the entry needs
    one), else by owner name for entries that run on any port.  ``owner_known`` False:
    entries that require a process do not match on the port alone."""
    names = set().union(*(o.names() for o in owners)) if owners else set()
    for svc in services:
        if svc.proto != proto or not any(lo <= port <= hi for lo, hi in svc.ports):
            continue
        if svc.requires_process and not (names & svc.processes):
            continue
        return svc
    for svc in services:
        if svc.proto == proto and svc.any_port and names & svc.processes:
            return svc
    return None


def run_services(ctx: CheckContext) -> Iterator[Result]:
    """Well-known ML and ops services listening on non-loopback addresses."""
    host, p = ctx.host, ctx.params
    socks, first = _start(host, "exposed services")
    yield from first
    if socks is None:
        return
    services = host.memo(("net-services",), load_services)
    ignore = set(p["ignore"])
    cand = exposed(socks)
    owners = owners_for(host, socks)
    found = 0
    for s in cand:
        got = owners.by_inode.get(s.inode, ())
        svc = identify(services, s.proto, s.port, got, bool(got))
        if svc is None or svc.name in ignore:
            continue
        found += 1
        who = _owner_text(s, owners)
        dropped, note = _firewall_note(host, s) if p["firewall_aware"] else (False, "")
        msg = f"{svc.name} ({s.port}/{s.proto}) listening on {_addr_text(s)}, " \
              f"process {who}{note}"
        subject = f"{svc.name} {s.port}/{s.proto} {_addr_text(s)}"
        data = {"service": svc.name, "proto": s.proto, "address": str(s.local),
                "port": s.port, "pids": [o.pid for o in got], "reference": svc.reference}
        if dropped:
            yield Result(Status.PASS, subject, msg, aspect=Aspect.RUNTIME,
                         evidence=_evidence(socks, s, owners), data=data)
            continue
        yield Result(
            Status.FAIL, subject, f"{msg}: {svc.risk}",
            expected="bound to loopback or not running", actual=s.endpoint(),
            aspect=Aspect.RUNTIME, evidence=_evidence(socks, s, owners),
            remediation=Remediation(
                f"{svc.name}: {svc.fix}. See {svc.reference}",
                (Snippet.command(f"ss -{'t' if s.proto == 'tcp' else 'u'}lpn "
                                 f"'sport = :{s.port}'", "show the socket and its process"),)),
            data=data)
    if not found and not socks.problems:
        yield Result(Status.PASS, "exposed services",
                     f"no well-known ML or ops service listens on a non-loopback address "
                     f"({len(cand)} non-loopback listening socket(s) checked)",
                     aspect=Aspect.RUNTIME,
                     evidence=tuple(Evidence.runtime(path) for _p, _f, path in TABLES))


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``network.listening_ports`` and ``network.exposed_services``."""
    return [
        CheckSpec(
            id="network.listening_ports",
            title="Only allowed ports listen on non-loopback addresses",
            run=run_listening, params_schema=LISTEN_SCHEMA, modes=("live",),
            description=(
                "Reads /proc/net/tcp, tcp6, udp, udp6 (TCP LISTEN; UDP bound and "
                "unconnected), ignores loopback addresses, and fails for each socket on a "
                "port not in `allowed`, naming the owning process from /proc/<pid>/fd "
                "(root needed for other users' processes). The scanner's network namespace "
                "only."),
        ),
        CheckSpec(
            id="network.exposed_services",
            title="No ML or ops service (Jupyter, Ray, MLflow, Docker API...) is reachable "
                  "from the network",
            run=run_services, params_schema=SERVICES_SCHEMA, modes=("live",),
            description=(
                "Matches non-loopback listening sockets against a table of well-known ML "
                "and ops services (port, protocol and process names; "
                "data/network_services.yaml) and fails for each one found."),
        ),
    ]
