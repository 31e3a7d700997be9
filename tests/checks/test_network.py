"""network.listening_ports and network.exposed_services: fixture /proc trees (live mode on
a fixture root) and one live scan of / against a socket the test opens itself."""

from __future__ import annotations

import os
import socket

import pytest

from aiaudit.core.model import Status
from tests.helpers import run_check
from tests.linux.network.test_procnet import HEADER, row


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
    return {r.subject: r for r in results}


def test_tensorboard_exposed_names_process(make_root) -> None:
    files, links = proc(
        tcp=row("0.0.0.0", 6006, 0x0A, 4242) + row("127.0.0.1", 8888, 0x0A, 4243) +
        row("0.0.0.0", 22, 0x0A, 4244),
        procs={123: ("tensorboard", "/usr/bin/python3 /usr/local/bin/tensorboard --bind_all",
                     {3: 4242}),
               200: ("jupyter-lab", "/usr/bin/python3 /usr/local/bin/jupyter-lab", {5: 4243})})
    root = make_root(files, links)
    res = run_check("network.exposed_services", root, live=True)
    (r,) = res
    assert r.status is Status.FAIL
    assert r.message.startswith("TensorBoard (6006/tcp) listening on 0.0.0.0, process "
                                "tensorboard[pid 123]")
    assert r.evidence[0].source == "/proc/net/tcp:2"
    assert r.remediation and "bind_all" in r.remediation.summary
    ports = by_subject(run_check("network.listening_ports", root, live=True))
    assert set(ports) == {"6006/tcp 0.0.0.0"}  # 22 allowed, 8888 on loopback
    assert ports["6006/tcp 0.0.0.0"].status is Status.FAIL
    assert "tensorboard[pid 123]" in ports["6006/tcp 0.0.0.0"].message


def test_ray_gcs_vs_redis_by_owner(make_root) -> None:
    files, links = proc(
        tcp=row("10.0.0.5", 6379, 0x0A, 11),
        tcp6=row("::", 6379, 0x0A, 12) + row("::ffff:10.0.0.5", 8265, 0x0A, 13),
        procs={7: ("gcs_server", "/opt/ray/core/src/ray/gcs/gcs_server --redis_port=6379",
                   {4: 11}),
               8: ("redis-server", "/usr/bin/redis-server *:6379", {4: 12})})
    got = by_subject(run_check("network.exposed_services", make_root(files, links),
                               live=True))
    assert set(got) == {"Ray GCS 6379/tcp 10.0.0.5", "Redis 6379/tcp [::]",
                        "Ray dashboard / Jobs API 8265/tcp 10.0.0.5"}
    assert all(r.status is Status.FAIL for r in got.values())
    assert "owner unknown" in got["Ray dashboard / Jobs API 8265/tcp 10.0.0.5"].message


def test_jupyter_on_any_port_by_process(make_root) -> None:
    files, links = proc(tcp=row("0.0.0.0", 9999, 0x0A, 5),
                        procs={9: ("python3", "/usr/bin/python3 /usr/bin/jupyter-notebook",
                                   {7: 5})})
    (r,) = run_check("network.exposed_services", make_root(files, links), live=True)
    assert r.status is Status.FAIL and r.subject == "Jupyter 9999/tcp 0.0.0.0"


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


def test_unreadable_fd_dir_is_owner_unknown(make_root) -> None:
    files, links = proc(tcp=row("0.0.0.0", 5000, 0x0A, 77))
    files["/proc/55/comm"] = "mlflow\n"
    links["/proc/55/fd"] = "../../../../../outside"  # escapes the root: unreadable
    (r,) = run_check("network.exposed_services", make_root(files, links), live=True)
    assert r.status is Status.FAIL and "MLflow" in r.message
    assert "owner unknown (other users' processes are not readable" in r.message


def test_unparsable_table_is_error_not_crash(make_root) -> None:
    files, links = proc(tcp=row("0.0.0.0", 6006, 0x0A, 1))
    files["/proc/net/udp"] = HEADER + "garbage row\n"
    got = run_check("network.listening_ports", make_root(files, links), live=True)
    assert {r.status for r in got} == {Status.ERROR, Status.FAIL}


def test_offline_skips(make_root) -> None:
    root = make_root({"/etc/hostname": "x\n"})
    for cid in ("network.listening_ports", "network.exposed_services"):
        (r,) = run_check(cid, root)
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


def test_service_table_is_well_formed() -> None:
    from aiaudit.checks.legacy_network import identify, load_services

    services = load_services()
    names = [s.name for s in services]
    assert len(names) == len(set(names))
    for s in services:
        assert s.proto in ("tcp", "udp") and s.risk and s.fix
        assert s.reference.startswith("https://")
        assert all(0 < lo <= hi <= 65535 for lo, hi in s.ports)
        assert s.processes or not s.requires_process
    # the brief's examples resolve by port alone (owner unknown)
    for port, name in ((8888, "Jupyter"), (6006, "TensorBoard"), (8265, "Ray dashboard"),
                       (10001, "Ray client"), (5000, "MLflow"), (2375, "Docker"),
                       (2376, "Docker"), (5555, "DCGM"), (9100, "node exporter"),
                       (6379, "Redis"), (8501, "Streamlit"), (7860, "Gradio")):
        svc = identify(services, "tcp", port, (), False)
        assert svc is not None and name in svc.name, port
    assert identify(services, "tcp", 8000, (), False) is None  # vLLM/Triton need an owner


def test_service_table_twin_in_sync() -> None:
    """Run `python -m aiaudit.core.ruleset.builtin checks/data` after editing
    checks/data/network_services.yaml: the scan reads the JSON twin (no PyYAML import)."""
    import json
    from pathlib import Path

    import yaml

    from aiaudit.core.ruleset.builtin import fingerprint

    data = Path(__file__).resolve().parents[2] / "checks" / "data"
    raw = (data / "network_services.yaml").read_bytes()
    doc = json.loads((data / "network_services.json").read_text())
    assert doc["source_crc32"] == fingerprint(raw), "stale: run python -m " \
        "aiaudit.core.ruleset.builtin checks/data"
    assert doc["data"] == yaml.safe_load(raw)


def test_service_table_stale_twin_falls_back_to_yaml(monkeypatch) -> None:
    import yaml
    from aiaudit.checks import legacy_network as network

    from aiaudit.core import resources

    fresh = network.load_services()
    orig_read, orig_load = resources.read_text, yaml.load
    used: list[str] = []

    def stale(package: str, name: str) -> str:
        text = orig_read(package, name)
        return text.replace('"source_crc32": "', '"source_crc32": "0') \
            if name.endswith("network_services.json") else text

    def load(*a, **k):
        used.append("yaml")
        return orig_load(*a, **k)

    monkeypatch.setattr(yaml, "load", load)
    assert network.load_services() == fresh and used == []  # the twin, no YAML
    monkeypatch.setattr(resources, "read_text", stale)
    assert network.load_services() == fresh and used == ["yaml"]


def test_one_proc_walk_per_scan(make_root) -> None:
    from aiaudit.core import plugins, ruleset
    from aiaudit.core.host import Host
    from aiaudit.core.runner import ScanOptions, scan

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


class _CountingHost:
    """A live Host on a fixture root that records the paths it lists and the links it
    reads."""

    @staticmethod
    def make(root):
        from aiaudit.core.host import Host

        class Counting(Host):
            def __init__(self, *a, **kw) -> None:
                super().__init__(*a, **kw)
                self.listed: list[str] = []
                self.links: list[str] = []

            def listdir(self, path: str) -> list[str]:
                self.listed.append(path)
                return super().listdir(path)

            def readlink(self, path: str) -> str | None:
                self.links.append(path)
                return super().readlink(path)

        return Counting(str(root), live=True)


def test_owner_walk_stops_once_every_socket_is_owned(make_root) -> None:
    from aiaudit.checks import legacy_network as network

    procs = {5: ("tensorboard", "tensorboard", {3: 1}), 6: ("nc", "nc -l 9999", {4: 2}),
             7: ("tensorboard", "tensorboard worker", {3: 1})}
    procs.update({pid: ("idle", "idle", {fd: 1000 + fd for fd in range(3, 40)})
                  for pid in range(8, 30)})
    files, links = proc(tcp=row("0.0.0.0", 6006, 0x0A, 1) + row("0.0.0.0", 9999, 0x0A, 2),
                        procs=procs)
    host = _CountingHost.make(make_root(files, links))
    owners = network.find_owners(host, {1, 2})
    assert owners.complete and {i: [o.pid for o in os_] for i, os_ in
                                owners.by_inode.items()} == {1: [5], 2: [6]}
    # in pid order: nothing after pid 6 is opened (pid 7 shares socket 1: not listed)
    read_pids = {p.split("/")[2] for p in host.links}
    assert read_pids <= {"5", "6"}, sorted(read_pids)
    # a socket nobody holds: the walk goes on to the end (and says so)
    host = _CountingHost.make(make_root(files, links))
    owners = network.find_owners(host, {1, 3})
    assert 3 not in owners.by_inode and "/proc/29/fd/39" in host.links


def test_listening_rule_walks_proc_only_for_an_unexpected_listener(make_root) -> None:
    from aiaudit.api import CheckContext
    from aiaudit.core.plugins import registry

    files, links = proc(tcp=row("0.0.0.0", 22, 0x0A, 1),
                        procs={5: ("sshd", "sshd -D", {3: 1})})
    root = make_root(files, links)
    spec = registry().checks["network.listening_ports"]
    params = {"allowed": ["22/tcp"], "udp": True, "firewall_aware": False}
    host = _CountingHost.make(root)
    [r] = spec.run(CheckContext(host, params))
    assert r.status is Status.PASS and "/proc" not in host.listed and not host.links
    host = _CountingHost.make(root)
    [r] = spec.run(CheckContext(host, {**params, "allowed": []}))
    assert r.status is Status.FAIL and "sshd[pid 5]" in r.message and "/proc" in host.listed
