"""Docker Engine's configuration as dockerd reads it (:mod:`aiaudit.linux.containers.docker`):
daemon.json merged with the unit's flags, and docker.socket's mode and group."""

from __future__ import annotations

import pytest

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.linux.containers import docker

UNIT = "/lib/systemd/system/docker.service"


def test_installed_by_binary_or_unit(make_root) -> None:
    assert not docker.docker_installed(Host(str(make_root({}))))
    assert docker.docker_installed(Host(str(make_root({"/usr/sbin/dockerd": "x"}))))
    assert docker.docker_installed(Host(str(make_root({UNIT: "[Service]\nExecStart=x\n"}))))


def test_exec_flags_are_the_last_exec_start(make_root) -> None:
    root = make_root({UNIT: "[Service]\nExecStart=/usr/bin/dockerd -H fd://\n",
                      "/etc/systemd/system/docker.service.d/x.conf":
                          "[Service]\nExecStart=\nExecStart=/usr/bin/dockerd --live-restore\n"})
    words, where = docker.exec_flags(Host(str(root)))
    assert words == ["/usr/bin/dockerd", "--live-restore"]
    assert where == "/etc/systemd/system/docker.service.d/x.conf:3"
    assert docker.exec_flags(Host(str(make_root({})))) == ([], None)


def test_daemon_json_absent_empty_and_refused(make_root) -> None:
    assert docker.read_daemon_json(Host(str(make_root({})))) == docker.DaemonJson("", {})
    got = docker.read_daemon_json(Host(str(make_root(
        {docker.DAEMON_JSON: '{\n  "live-restore": true\n}\n'}))))
    assert got.config == {"live-restore": True}
    assert docker.daemon_json_line(got, "live-restore") == 2
    with pytest.raises(ParseError):
        docker.read_daemon_json(Host(str(make_root({docker.DAEMON_JSON: '{"a": 1, "a": 2}'}))))


def test_flag_values() -> None:
    words = ["dockerd", "-H", "fd://", "-H=tcp://0.0.0.0:2375", "--host", "unix:///x", "-H"]
    assert docker.flag_values(words, "-H", "--host") == ["fd://", "tcp://0.0.0.0:2375",
                                                         "unix:///x"]


def test_conflicts_and_non_booleans() -> None:
    cfg = {"hosts": ["unix:///var/run/docker.sock"], "live-restore": "true", "tlsverify": 1}
    keys = docker.json_keys("tcp-tls")
    assert keys == ("hosts", "tlsverify")
    assert docker.flag_conflicts(cfg, ["dockerd", "-H", "fd://"], keys) == ["hosts"]
    assert docker.flag_conflicts(cfg, ["dockerd", "--host=fd://"], keys) == ["hosts"]
    assert docker.flag_conflicts(cfg, ["dockerd"], keys) == []
    assert docker.non_booleans(cfg, docker.json_keys("live-restore")) == ["live-restore"]
    assert docker.non_booleans(cfg, keys) == ["tlsverify"]


@pytest.mark.parametrize(("option", "cfg", "words", "value", "holds"), [
    ("userns-remap", {"userns-remap": "default"}, [], "default", True),
    ("userns-remap", {}, ["--userns-remap=dockremap"], "dockremap", True),
    ("userns-remap", {"userns-remap": ""}, [], "", False),
    ("no-new-privileges", {}, ["--no-new-privileges"], True, True),
    ("no-new-privileges", {"no-new-privileges": False}, ["--no-new-privileges"], False, False),
    ("live-restore", {}, [], None, False),
])
def test_settings(option: str, cfg: dict, words: list[str], value: object, holds: bool) -> None:
    got = docker.setting_value(cfg, words, option)
    assert got == value
    assert docker.setting_holds(option, got) is holds


def test_tcp_listeners_and_tls() -> None:
    cfg = {"hosts": ["unix:///var/run/docker.sock", "tcp://0.0.0.0:2376", 7]}
    assert docker.tcp_listeners(cfg, ["-H", "tcp://127.0.0.1:2375"]) == [
        "tcp://0.0.0.0:2376", "tcp://127.0.0.1:2375"]
    assert docker.tcp_listeners({"hosts": "tcp://x"}, []) == []
    assert not docker.tls_verified({"tls": True}, [])
    assert docker.tls_verified({"tlsverify": True}, [])
    assert docker.tls_verified({}, ["--tlsverify=true"])


def test_nvidia_runtime_and_cdi() -> None:
    assert docker.nvidia_runtimes({"runtimes": {"runc": {}, "NVIDIA-x": {}}}) == ["NVIDIA-x"]
    assert docker.nvidia_runtimes({"runtimes": ["nvidia"]}) == []
    assert docker.cdi_enabled({"features": {"cdi": True}})
    assert not docker.cdi_enabled({"features": {"cdi": "true"}})
    assert not docker.cdi_enabled({"features": True})


def test_socket_settings_defaults_and_unit(make_root) -> None:
    none = docker.socket_settings(Host(str(make_root({}))))
    assert (none.mode, none.group, none.assignments) == ("0660", "docker", ())
    root = make_root({"/lib/systemd/system/docker.socket": "[Socket]\nSocketGroup=users\n"})
    got = docker.socket_settings(Host(str(root)))
    assert (got.mode, got.group) == ("0660", "users")
    assert got.assignments == (("SocketGroup", "users", "/lib/systemd/system/docker.socket",
                                2),)
    assert docker.live_socket_mode(Host(str(root))) is None  # offline


@pytest.mark.parametrize(("mode", "group", "exposure"), [
    (0o666, "docker", "world"), (0o660, "users", "group"), (0o640, "users", None),
    (0o660, "docker", None)])
def test_socket_exposure(mode: int, group: str, exposure: str | None) -> None:
    assert docker.socket_exposure(mode, group, ["users", "staff"]) == exposure
