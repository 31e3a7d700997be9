"""What tuned writes to a sysctl key after systemd-sysctl (:mod:`aiaudit.linux.sysctl.tuned`);
the check's view of it is in ``tests/checks/kernel/test_sysctl_tuned.py``."""

from __future__ import annotations

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.sysctl.files import load_config
from aiaudit.linux.sysctl.resolved import Resolved
from aiaudit.linux.sysctl.tuned import tuned_decide, tuned_reapplies

ENABLED = {"/etc/systemd/system/multi-user.target.wants/tuned.service":
           "/usr/lib/systemd/system/tuned.service"}
BASE = {"/usr/lib/systemd/system/tuned.service": "[Service]\nExecStart=/usr/sbin/tuned\n"
                                                 "[Install]\nWantedBy=multi-user.target\n",
        "/etc/tuned/active_profile": "ml\n",
        "/etc/tuned/ml/tuned.conf": "[main]\ninclude=base\n[sysctl]\nvm.dirty_ratio=10\n",
        "/usr/lib/tuned/base/tuned.conf": "[sysctl]\nvm.swappiness=60\n"}


@pytest.mark.parametrize("files,key,value,reapplied", [
    ({}, "vm/swappiness", "60", False),
    ({}, "vm/dirty_ratio", "10", False),
    ({}, "vm/dirty_background_ratio", None, None),
    ({"/etc/sysctl.d/90-site.conf": "vm.swappiness = 5\nvm.swappiness = 6\n"},
     "vm/swappiness", "6", True),
    # /usr/lib is not re-applied: the profile wins
    ({"/usr/lib/sysctl.d/90-vendor.conf": "vm.swappiness = 5\n"}, "vm/swappiness", "60", False),
    ({"/etc/sysctl.d/90-site.conf": "vm.swappiness = 5\n",
      "/etc/tuned/tuned-main.conf": "reapply_sysctl = 0\n"}, "vm/swappiness", "60", False),
])
def test_profile_then_reapplied_admin_files(make_root, files, key, value, reapplied) -> None:
    """The same answer from the plain configuration and from the run's index."""
    host = Host(str(make_root({**BASE, **files}, links=ENABLED)), live=False)
    cfg = load_config(host)
    got = tuned_decide(host, cfg, key)
    assert got == tuned_decide(host, Resolved(cfg), key)
    if value is None:
        assert got is None
    else:
        assert got is not None and (got.value, got.reapplied) == (value, reapplied)


def test_disabled_tuned_decides_nothing(make_root) -> None:
    host = Host(str(make_root(BASE)), live=False)
    assert tuned_decide(host, load_config(host), "vm/swappiness") is None


@pytest.mark.parametrize("text,want", [
    (None, True), ("", True), ("reapply_sysctl = 1\n", True), ("reapply_sysctl = 0\n", False),
    ("reapply_sysctl=off\n", False), ("# reapply_sysctl = 0\n", True),
    ("reapply_sysctl = False\n", False),
])
def test_reapply_sysctl_setting(make_root, text: str | None, want: bool) -> None:
    files = {} if text is None else {"/etc/tuned/tuned-main.conf": text}
    assert tuned_reapplies(Host(str(make_root(files)), live=False)) is want
