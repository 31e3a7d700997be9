"""``containers.podman_rootless``: the training user's subordinate ids."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.helpers import run_check


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
