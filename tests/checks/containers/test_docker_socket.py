"""``containers.docker_socket``: docker.socket's mode and group."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from tests.checks.containers.docker_roots import docker
from tests.helpers import run_check


@pytest.mark.parametrize(("socket", "status"), [
    ("SocketMode=0660\nSocketGroup=docker\n", Status.PASS),
    ("SocketMode=0666\n", Status.FAIL),
    ("SocketGroup=users\n", Status.FAIL)])
def test_socket(make_root, socket: str, status: Status) -> None:
    root = docker(make_root, **{"/lib/systemd/system/docker.socket": "[Socket]\n" + socket})
    [r] = run_check("containers.docker_socket", root)
    assert r.status is status
