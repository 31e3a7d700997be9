"""``time.sync``: an enabled (and, live, running) time synchronisation daemon."""

from __future__ import annotations

from aiaudit.model import Aspect, Status
from tests.helpers import run_check

INIT = {"/usr/lib/systemd/systemd": "\x7fELF"}
UNIT = "[Service]\nExecStart=/usr/sbin/chronyd\n[Install]\nWantedBy=multi-user.target\n"
WANT = {"/etc/systemd/system/multi-user.target.wants/chrony.service":
        "/lib/systemd/system/chrony.service"}


def test_offline(make_root) -> None:
    unit = {**INIT, "/lib/systemd/system/chrony.service": UNIT}
    [r] = run_check("time.sync", make_root(unit, WANT))
    assert r.status is Status.PASS and r.aspect is Aspect.PERSISTED
    [r] = run_check("time.sync", make_root(unit))
    assert r.status is Status.FAIL
    # a dangling wants link without the unit file is not an installed daemon
    [r] = run_check("time.sync", make_root(INIT, WANT))
    assert r.status is Status.FAIL


def test_container_image_skips(make_root) -> None:
    [r] = run_check("time.sync", make_root({"/etc/os-release": "ID=debian\n"}))
    assert r.status is Status.SKIP and "container image" in r.message
    [r] = run_check("updates.unattended", make_root({"/etc/apt/sources.list": ""}))
    assert r.status is Status.SKIP
    [r] = run_check("irq.balance", make_root({}))
    assert r.status is Status.SKIP


def test_live(make_root) -> None:
    files = {"/lib/systemd/system/chrony.service": UNIT, "/proc/1/comm": "systemd\n"}
    [r] = run_check("time.sync", make_root(files, WANT), live=True)
    assert r.status is Status.FAIL and "not running" in r.message
    files["/proc/812/comm"] = "chronyd\n"
    [r] = run_check("time.sync", make_root(files, WANT), live=True)
    assert r.status is Status.PASS
    [r] = run_check("time.sync", make_root(files), live=True)
    assert r.status is Status.FAIL and r.aspect is Aspect.DRIFT
