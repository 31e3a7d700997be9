"""Fixture /proc trees for the socket tests: the four tables plus processes holding
sockets, and a live Host that records what it lists and reads."""

from __future__ import annotations

from aiaudit.core.host import Host
from tests.linux.network.test_procnet import HEADER


def proc(tcp: str = "", tcp6: str = "", udp: str = "", udp6: str = "",
         procs: dict[int, tuple[str, str, dict[int, int]]] | None = None
         ) -> tuple[dict[str, str], dict[str, str]]:
    """Files and links of a fixture /proc: tables plus processes (comm, cmdline,
    {fd: socket inode})."""
    files = {"/proc/net/tcp": HEADER + tcp, "/proc/net/tcp6": HEADER + tcp6,
             "/proc/net/udp": HEADER + udp, "/proc/net/udp6": HEADER + udp6}
    links: dict[str, str] = {}
    for pid, (comm, cmdline, fds) in (procs or {}).items():
        files[f"/proc/{pid}/comm"] = comm + "\n"
        files[f"/proc/{pid}/cmdline"] = cmdline.replace(" ", "\0") + "\0"
        links[f"/proc/{pid}/fd/0"] = "/dev/null"
        for fd, inode in fds.items():
            links[f"/proc/{pid}/fd/{fd}"] = f"socket:[{inode}]"
    return files, links


def by_subject(results):
    """Results by subject."""
    return {r.subject: r for r in results}


class CountingHost(Host):
    """A live Host on a fixture root that records the paths it lists and the links it
    reads."""

    def __init__(self, root) -> None:
        super().__init__(str(root), live=True)
        self.listed: list[str] = []
        self.links: list[str] = []

    def listdir(self, path: str) -> list[str]:
        self.listed.append(path)
        return super().listdir(path)

    def readlink(self, path: str) -> str | None:
        self.links.append(path)
        return super().readlink(path)
