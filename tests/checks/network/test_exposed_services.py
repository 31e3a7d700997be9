"""network.exposed_services: fixture /proc trees (live mode on a fixture root): services
found by port, by port and owner, by owner on any port; an owner that cannot be read."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.helpers import run_check
from tests.linux.network.hosts import by_subject, proc
from tests.linux.network.test_procnet import row


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


def test_unreadable_fd_dir_is_owner_unknown(make_root) -> None:
    files, links = proc(tcp=row("0.0.0.0", 5000, 0x0A, 77))
    files["/proc/55/comm"] = "mlflow\n"
    links["/proc/55/fd"] = "../../../../../outside"  # escapes the root: unreadable
    (r,) = run_check("network.exposed_services", make_root(files, links), live=True)
    assert r.status is Status.FAIL and "MLflow" in r.message
    assert "owner unknown (other users' processes are not readable" in r.message


def test_offline_skips(make_root) -> None:
    root = make_root({"/etc/hostname": "x\n"})
    (r,) = run_check("network.exposed_services", root)
    assert r.status is Status.SKIP and "offline" in r.message


def test_ignored_service_is_not_reported(make_root) -> None:
    files, links = proc(tcp=row("0.0.0.0", 6006, 0x0A, 1),
                        procs={5: ("tensorboard", "tensorboard", {3: 1})})
    (r,) = run_check("network.exposed_services", make_root(files, links),
                     {"ignore": ["TensorBoard"]}, live=True)
    assert r.status is Status.PASS and "1 non-loopback listening socket(s)" in r.message
