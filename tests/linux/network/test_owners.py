"""Socket owners (aiaudit.linux.network.owners): the /proc walk stops once every socket
has an owner, is done once per scan, and names at most MAX_OWNERS processes."""

from __future__ import annotations

from aiaudit.linux.network import owners as network
from aiaudit.linux.network.sockets import Sockets, owners_for
from tests.linux.network.hosts import CountingHost, proc
from tests.linux.network.test_procnet import row


def test_one_proc_walk_per_scan(make_root) -> None:
    from aiaudit.core import plugins, ruleset
    from aiaudit.core.host import Host
    from aiaudit.core.scan import ScanOptions, scan

    class Counting(Host):
        walks = 0

        def listdir(self, path: str) -> list[str]:
            if path == "/proc":
                Counting.walks += 1
            return super().listdir(path)

    files, links = proc(tcp=row("0.0.0.0", 6006, 0x0A, 1) + row("0.0.0.0", 9999, 0x0A, 2),
                        procs={5: ("tensorboard", "tensorboard", {3: 1})})
    host = Counting(str(make_root(files, links)), live=True)
    rs = ruleset.load("dl-training", plugins.registry(), validate=True)
    run = scan(rs, host, ScanOptions(only=("NET-LISTEN-UNEXPECTED-PORTS",
                                           "NET-ML-SERVICES-EXPOSED"), reraise=True))
    assert Counting.walks == 1
    assert {f.result.subject for f in run.findings} == {
        "6006/tcp 0.0.0.0", "9999/tcp 0.0.0.0", "TensorBoard 6006/tcp 0.0.0.0"}


def test_owner_walk_stops_once_every_socket_is_owned(make_root) -> None:
    procs = {5: ("tensorboard", "tensorboard", {3: 1}), 6: ("nc", "nc -l 9999", {4: 2}),
             7: ("tensorboard", "tensorboard worker", {3: 1})}
    procs.update({pid: ("idle", "idle", {fd: 1000 + fd for fd in range(3, 40)})
                  for pid in range(8, 30)})
    files, links = proc(tcp=row("0.0.0.0", 6006, 0x0A, 1) + row("0.0.0.0", 9999, 0x0A, 2),
                        procs=procs)
    host = CountingHost(make_root(files, links))
    owners = network.find_owners(host, {1, 2})
    assert owners.complete and {i: [o.pid for o in os_] for i, os_ in
                                owners.by_inode.items()} == {1: [5], 2: [6]}
    # in pid order: nothing after pid 6 is opened (pid 7 shares socket 1: not listed)
    read_pids = {p.split("/")[2] for p in host.links}
    assert read_pids <= {"5", "6"}, sorted(read_pids)
    # a socket nobody holds: the walk goes on to the end (and says so)
    host = CountingHost(make_root(files, links))
    owners = network.find_owners(host, {1, 3})
    assert 3 not in owners.by_inode and "/proc/29/fd/39" in host.links


def test_shared_socket_names_the_first_owners_and_a_count(make_root, monkeypatch) -> None:
    monkeypatch.setattr(network, "MAX_OWNERS", 2)
    procs = {pid: ("worker", f"worker {pid}", {3: 7}) for pid in range(10, 14)}
    files, links = proc(tcp=row("0.0.0.0", 6006, 0x0A, 7), procs=procs)
    host = CountingHost(make_root(files, links))
    from aiaudit.linux.network.procnet import parse

    (sock,) = parse(files["/proc/net/tcp"], "tcp", 4)
    # socket 8 is never found: every process is read, all four share socket 7
    owners = network.find_owners(host, {7, 8})
    assert [o.pid for o in owners.by_inode[7]] == [10, 11] and owners.more == {7: 2}
    assert network.owner_text(sock, owners) == \
        "worker[pid 10], worker[pid 11] and 2 more processes"
    assert owners.by_inode[7][0].cmdline == ("worker", "10")


def test_owner_text_says_why_unknown(make_root) -> None:
    from aiaudit.linux.network.procnet import parse

    (sock,) = parse(row("0.0.0.0", 6006, 0x0A, 7), "tcp", 4)
    assert "run as root" in network.owner_text(sock, network.Owners({}, 1, True))
    assert "search bound" in network.owner_text(sock, network.Owners({}, 0, False))
    assert "another PID namespace" in network.owner_text(sock, network.Owners({}, 0, True))


def test_owners_for_asks_about_exposed_sockets_only(make_root) -> None:
    from aiaudit.linux.network.procnet import parse

    files, links = proc(procs={5: ("a", "a", {3: 1}), 6: ("b", "b", {3: 2})})
    socks = Sockets(tuple(parse(row("0.0.0.0", 80, 0x0A, 1) + row("127.0.0.1", 81, 0x0A, 2),
                                "tcp", 4)), {}, ())
    got = owners_for(CountingHost(make_root(files, links)), socks)
    assert set(got.by_inode) == {1}
