"""network.listening_ports: fixture /proc trees (live mode on a fixture root), one live scan
of / against a socket the test opens itself, and firewall_aware inside a network namespace
with real nft rules."""

from __future__ import annotations

import json
import os
import socket
import sys

import pytest

from aiaudit.core.model import Status
from tests.helpers import run_check
from tests.linux.netfilter.hosts import NFT
from tests.linux.network.hosts import CountingHost, by_subject, proc
from tests.linux.network.test_procnet import HEADER, row
from tests.netns import netns, run_in


def test_udp_bound_vs_connected_and_allowed(make_root) -> None:
    files, links = proc(
        udp=row("0.0.0.0", 11211, 0x07, 21) + row("0.0.0.0", 40000, 0x01, 22,
                                                    remote="10.0.0.9", rport=53),
        udp6=row("::", 60001, 0x07, 23))
    root = make_root(files, links)
    got = by_subject(run_check("network.listening_ports", root,
                               {"allowed": ["22/tcp", "60000-61000/udp"]}, live=True))
    assert set(got) == {"11211/udp 0.0.0.0"}
    (svc,) = run_check("network.exposed_services", root, live=True)
    assert svc.subject.startswith("Memcached (UDP) 11211/udp")
    (only_tcp,) = run_check("network.listening_ports", root,
                            {"allowed": ["22/tcp", "60000-61000/udp"], "udp": False}, live=True)
    assert only_tcp.status is Status.PASS


def test_pass_when_only_allowed(make_root) -> None:
    files, links = proc(tcp=row("0.0.0.0", 22, 0x0A, 1), tcp6=row("::", 22, 0x0A, 2) +
                        row("::1", 631, 0x0A, 3))
    root = make_root(files, links)
    (r,) = run_check("network.listening_ports", root, live=True)
    assert r.status is Status.PASS and "2 non-loopback" in r.message
    (s,) = run_check("network.exposed_services", root, live=True)
    assert s.status is Status.PASS


def test_unparsable_table_is_error_not_crash(make_root) -> None:
    files, links = proc(tcp=row("0.0.0.0", 6006, 0x0A, 1))
    files["/proc/net/udp"] = HEADER + "garbage row\n"
    got = run_check("network.listening_ports", make_root(files, links), live=True)
    assert {r.status for r in got} == {Status.ERROR, Status.FAIL}


def test_offline_skips(make_root) -> None:
    root = make_root({"/etc/hostname": "x\n"})
    (r,) = run_check("network.listening_ports", root)
    assert r.status is Status.SKIP and "offline" in r.message


def test_live_scan_sees_own_socket() -> None:
    """Bind 0.0.0.0:<free port>, scan / live: the socket is reported with this process as
    its owner."""
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("no /proc/net/tcp")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        got = by_subject(run_check("network.listening_ports", "/", live=True))
        r = got.get(f"{port}/tcp 0.0.0.0")
        assert r is not None and r.status is Status.FAIL, sorted(got)
        assert f"[pid {os.getpid()}]" in r.message
        assert os.getpid() in r.data["pids"]
    got = by_subject(run_check("network.listening_ports", "/", live=True))
    assert f"{port}/tcp 0.0.0.0" not in got


def test_listening_rule_walks_proc_only_for_an_unexpected_listener(make_root) -> None:
    from aiaudit.api import CheckContext
    from aiaudit.core.plugins import registry

    files, links = proc(tcp=row("0.0.0.0", 22, 0x0A, 1),
                        procs={5: ("sshd", "sshd -D", {3: 1})})
    root = make_root(files, links)
    spec = registry().checks["network.listening_ports"]
    params = {"allowed": ["22/tcp"], "udp": True, "firewall_aware": False}
    host = CountingHost(root)
    [r] = spec.run(CheckContext(host, params))
    assert r.status is Status.PASS and "/proc" not in host.listed and not host.links
    host = CountingHost(root)
    [r] = spec.run(CheckContext(host, {**params, "allowed": []}))
    assert r.status is Status.FAIL and "sshd[pid 5]" in r.message and "/proc" in host.listed


_SOCKET_PROBE = """
import json, socket, sys
from tests.helpers import run_check
with socket.socket() as s:
    s.bind(("0.0.0.0", 0)); s.listen()
    port = s.getsockname()[1]
    out = {}
    for aware in (False, True):
        for r in run_check("network.listening_ports", "/", {"firewall_aware": aware},
                           live=True):
            if r.subject == f"{port}/tcp 0.0.0.0":
                out[str(aware)] = [r.status.value, r.message]
print(json.dumps(out))
"""


@pytest.mark.oracle
def test_listening_port_firewall_aware_in_netns() -> None:
    """A socket on 0.0.0.0 that the running firewall drops passes with firewall_aware."""
    with netns("aware") as ns:
        run_in(ns, "nft", "-f", str(NFT / "server.nft"))
        got = json.loads(run_in(ns, sys.executable, "-c", _SOCKET_PROBE))
    assert got["False"][0] == "fail"
    assert got["True"][0] == "pass" and "firewall drops new connections" in got["True"][1]
