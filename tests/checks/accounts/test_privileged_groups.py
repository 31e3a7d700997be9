"""``accounts.privileged_groups``: primary group and member lists against the
root-equivalent groups."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from tests.checks.accounts.test_sudo_nopasswd import GROUP, PASSWD
from tests.helpers import run_check


@pytest.mark.parametrize(("group", "status"), [
    ("docker:x:998:trainer\n", Status.FAIL), ("lxd:x:997:alice,trainer\n", Status.FAIL),
    ("disk:x:6:\n", Status.PASS), ("video:x:44:trainer\n", Status.PASS)])
def test_groups(make_root, group: str, status: Status) -> None:
    root = make_root({"/etc/passwd": PASSWD, "/etc/group": GROUP + group})
    [r] = run_check("accounts.privileged_groups", root, user="trainer")
    assert r.status is status


def test_primary_group_counts(make_root) -> None:
    root = make_root({"/etc/passwd": "trainer:x:1001:6::/tmp:/bin/sh\n",
                      "/etc/group": "disk:x:6:\n"})
    [r] = run_check("accounts.privileged_groups", root, user="trainer")
    assert r.status is Status.FAIL and "primary" in r.message
