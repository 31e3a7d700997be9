"""``containers.*``: daemon.json and dockerd flags, the Docker socket, the NVIDIA Container
Toolkit, Apptainer setuid mode and rootless podman."""

from __future__ import annotations

import os
import stat

import pytest

from aiaudit.core.model import Status
from tests.helpers import run_check

DOCKER = {"/usr/bin/dockerd": "\x7fELF",
          "/lib/systemd/system/docker.service": "[Service]\nExecStart=/usr/bin/dockerd "
                                                "--containerd=/run/containerd/containerd.sock\n"}
DPKG = "Package: {p}\nStatus: install ok installed\nArchitecture: amd64\nVersion: {v}\n\n"


def docker(make_root, daemon: str | None = None, unit: str | None = None, **more):
    files = dict(DOCKER, **more)
    if daemon is not None:
        files["/etc/docker/daemon.json"] = daemon
    if unit is not None:
        files["/lib/systemd/system/docker.service"] = f"[Service]\nExecStart={unit}\n"
    return make_root(files)


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


@pytest.mark.parametrize(("socket", "status"), [
    ("SocketMode=0660\nSocketGroup=docker\n", Status.PASS),
    ("SocketMode=0666\n", Status.FAIL),
    ("SocketGroup=users\n", Status.FAIL)])
def test_socket(make_root, socket: str, status: Status) -> None:
    root = docker(make_root, **{"/lib/systemd/system/docker.socket": "[Socket]\n" + socket})
    [r] = run_check("containers.docker_socket", root)
    assert r.status is status


@pytest.mark.parametrize(("version", "status"), [
    ("1.17.8-1", Status.PASS), ("1.17.4-1", Status.FAIL), ("1.18.0~rc.1-1", Status.PASS),
    ("1.17.8~rc.1-1", Status.FAIL)])
def test_toolkit_version(make_root, version: str, status: Status) -> None:
    root = make_root({"/var/lib/dpkg/status": DPKG.format(p="nvidia-container-toolkit",
                                                          v=version)})
    [r] = run_check("containers.nvidia_toolkit", root, {"property": "version"})
    assert r.status is status


def test_toolkit_config(make_root) -> None:
    pkg = {"/var/lib/dpkg/status": DPKG.format(p="nvidia-container-toolkit", v="1.17.8-1")}
    got = {r.subject: r.status for r in run_check(
        "containers.nvidia_toolkit", make_root(pkg), {"property": "config"})}
    assert got["accept-nvidia-visible-devices-envvar-when-unprivileged"] is Status.FAIL
    conf = ("accept-nvidia-visible-devices-envvar-when-unprivileged = false\n"
            '[nvidia-container-cli]\nldconfig = "/sbin/ldconfig"\n')
    got = {r.subject: r.status for r in run_check(
        "containers.nvidia_toolkit",
        make_root({**pkg, "/etc/nvidia-container-runtime/config.toml": conf}),
        {"property": "config"})}
    assert got == {"accept-nvidia-visible-devices-envvar-when-unprivileged": Status.PASS,
                   "nvidia-container-cli.ldconfig": Status.FAIL}
    [r] = run_check("containers.nvidia_toolkit", make_root(
        {**pkg, "/etc/nvidia-container-runtime/config.toml": "a = \n"}), {"property": "config"})
    assert r.status is Status.ERROR
    [r] = run_check("containers.nvidia_toolkit", make_root({}), {"property": "config"})
    assert r.status is Status.SKIP


@pytest.mark.skipif(os.geteuid() != 0, reason="a setuid-root file needs root to create")
def test_apptainer_setuid(make_root) -> None:
    root = make_root({"/etc/apptainer/apptainer.conf": "allow setuid = yes\n",
                      "/usr/libexec/apptainer/bin/starter-suid": "\x7fELF"})
    starter = root / "usr/libexec/apptainer/bin/starter-suid"
    [r] = run_check("containers.apptainer_setuid", root)
    assert r.status is Status.PASS  # not setuid: unprivileged mode
    os.chmod(starter, 0o4755)
    assert starter.stat().st_mode & stat.S_ISUID
    [r] = run_check("containers.apptainer_setuid", root)
    assert r.status is Status.FAIL
    (root / "etc/apptainer/apptainer.conf").write_text("allow setuid = no\n")
    [r] = run_check("containers.apptainer_setuid", root)
    assert r.status is Status.PASS


def test_podman_subids(make_root) -> None:
    base = {"/usr/bin/podman": "x", "/etc/passwd": "trainer:x:1001:1001::/h:/bin/sh\n",
            "/etc/group": "trainer:x:1001:\n"}
    [r] = run_check("containers.podman_rootless", make_root(
        {**base, "/etc/subuid": "trainer:100000:65536\n", "/etc/subgid": "1001:100000:65536\n"}),
        user="trainer")
    assert r.status is Status.PASS
    [r] = run_check("containers.podman_rootless", make_root(
        {**base, "/etc/subuid": "trainer:100000:1000\n"}), user="trainer")
    assert r.status is Status.FAIL
    [r] = run_check("containers.podman_rootless", make_root({}), user="trainer")
    assert r.status is Status.SKIP
