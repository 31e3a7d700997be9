"""A socket whose owner cannot be found because a process's fd links were refused (PID 1
of a container runtime, even to root): the message names that process, not "another PID
namespace" (issue 30)."""

from __future__ import annotations

from aiaudit.linux.network import owners as network
from aiaudit.linux.network.procnet import parse
from tests.linux.network.hosts import CountingHost, proc
from tests.linux.network.test_procnet import row


class Refusing(CountingHost):
    """readlink of PID 1's fd links fails, as the kernel refuses it (ptrace access mode)."""

    def readlink(self, path: str) -> str | None:
        return None if path.startswith("/proc/1/fd/") else super().readlink(path)


def test_refused_fd_links_are_named(make_root) -> None:
    files, links = proc(tcp=row("0.0.0.0", 2024, 0x0A, 9),
                        procs={1: ("process_api", "process_api --port 2024", {3: 9}),
                               5: ("sleep", "sleep 1", {})})
    host = Refusing(make_root(files, links))
    (sock,) = parse(files["/proc/net/tcp"], "tcp", 4)
    owners = network.find_owners(host, {9})
    assert [o.pid for o in owners.blind] == [1]
    text = network.owner_text(sock, owners)
    assert "process_api[pid 1]" in text and "could not be read" in text
    assert "PID namespace" not in text and "kernel socket" not in text


def test_one_link_gone_meanwhile_is_not_refusal(make_root) -> None:
    """An fd closed between listing fd/ and reading it (the scanner's own listing fd)
    does not make the process "unreadable"."""
    files, links = proc(tcp=row("0.0.0.0", 2024, 0x0A, 9),
                        procs={5: ("sleep", "sleep 1", {3: 100, 4: 101})})

    class OneGone(CountingHost):
        def readlink(self, path: str) -> str | None:
            return None if path == "/proc/5/fd/4" else super().readlink(path)

    (sock,) = parse(files["/proc/net/tcp"], "tcp", 4)
    owners = network.find_owners(OneGone(make_root(files, links)), {9})
    assert owners.blind == ()
    assert "another PID namespace" in network.owner_text(sock, owners)


def test_ss_command_says_it_is_a_diagnosis() -> None:
    from aiaudit.linux.network.sockets import ss_command
    from aiaudit.remediate.grouping import is_diagnosis

    (sock,) = parse(row("0.0.0.0", 2024, 0x0A, 9), "tcp", 4)
    cmd = ss_command(sock)
    assert cmd.startswith("ss -tlpn 'sport = :2024'") and is_diagnosis(cmd)
