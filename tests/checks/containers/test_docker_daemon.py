"""``containers.docker_daemon``: daemon.json merged with the flags of docker.service."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from tests.checks.containers.docker_roots import DPKG, docker
from tests.helpers import run_check


@pytest.mark.parametrize(("option", "daemon", "status"), [
    ("userns-remap", '{"userns-remap": "default"}', Status.PASS),
    ("userns-remap", "{}", Status.FAIL),
    ("userns-remap", '{"userns-remap": ""}', Status.FAIL),
    ("no-new-privileges", '{"no-new-privileges": true}', Status.PASS),
    ("no-new-privileges", '{"no-new-privileges": false}', Status.FAIL),
    ("live-restore", '{"live-restore": true}', Status.PASS),
    ("live-restore", None, Status.FAIL),
    ("tcp-tls", '{"hosts": ["unix:///var/run/docker.sock"]}', Status.PASS),
    ("tcp-tls", '{"hosts": ["tcp://0.0.0.0:2376"], "tls": true}', Status.FAIL),
    ("tcp-tls", '{"hosts": ["tcp://0.0.0.0:2376"], "tlsverify": true}', Status.PASS),
])
def test_daemon_json(make_root, option: str, daemon: str | None, status: Status) -> None:
    [r] = run_check("containers.docker_daemon", docker(make_root, daemon), {"option": option})
    assert r.status is status, r.message
    if status is Status.FAIL:
        assert r.remediation is not None


def test_unit_flags_count(make_root) -> None:
    root = docker(make_root, "{}", unit="/usr/bin/dockerd -H fd:// -H tcp://0.0.0.0:2375 "
                                        "--no-new-privileges")
    assert root
    [r] = run_check("containers.docker_daemon", root, {"option": "tcp-tls"})
    assert r.status is Status.FAIL and "tcp://0.0.0.0:2375" in r.message
    [r] = run_check("containers.docker_daemon", root, {"option": "no-new-privileges"})
    assert r.status is Status.PASS


def test_flag_and_key_conflict_is_an_error(make_root) -> None:
    root = docker(make_root, '{"hosts": ["unix:///var/run/docker.sock"]}',
                  unit="/usr/bin/dockerd -H fd://")
    [r] = run_check("containers.docker_daemon", root, {"option": "tcp-tls"})
    assert r.status is Status.ERROR and "refuses to start" in r.message
    [r] = run_check("containers.docker_daemon", docker(make_root, '{"live-restore": "true"}'),
                    {"option": "live-restore"})
    assert r.status is Status.ERROR and "true/false" in r.message


def test_daemon_json_errors_and_absent_docker(make_root) -> None:
    [r] = run_check("containers.docker_daemon", docker(make_root, '{"a": 1, "a": 2}'),
                    {"option": "live-restore"})
    assert r.status is Status.ERROR and "twice" in r.message
    [r] = run_check("containers.docker_daemon", make_root({}), {"option": "live-restore"})
    assert r.status is Status.SKIP


def test_nvidia_runtime_or_cdi(make_root) -> None:
    drv = {"/var/lib/dpkg/status": DPKG.format(p="libnvidia-compute-535", v="535.161.08-1")}
    [r] = run_check("containers.docker_daemon", docker(make_root, "{}", **drv),
                    {"option": "nvidia-runtime"})
    assert r.status is Status.FAIL
    rt = '{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}'
    [r] = run_check("containers.docker_daemon", docker(make_root, rt, **drv),
                    {"option": "nvidia-runtime"})
    assert r.status is Status.PASS
    cdi = {**drv, "/etc/cdi/nvidia.yaml": "cdiVersion: 0.5.0\n"}
    [r] = run_check("containers.docker_daemon",
                    docker(make_root, '{"features": {"cdi": true}}', **cdi),
                    {"option": "nvidia-runtime"})
    assert r.status is Status.PASS and "CDI" in r.message
    [r] = run_check("containers.docker_daemon", docker(make_root, "{}"),
                    {"option": "nvidia-runtime"})
    assert r.status is Status.SKIP
