"""aiaudit.linux.kernel.thp: transparent hugepages at the next boot."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.kernel.thp import FIX_UNIT, boot_thp
from tests.checks.tuning_trees import GRUB_CFG, TUNED_ENABLED, TUNED_LINK


def _unit(name: str, value: str, setting: str = "enabled") -> dict[str, str]:
    return {f"/etc/systemd/system/{name}":
            f"[Service]\nExecStart=/bin/sh -c 'echo {value} > /sys/kernel/mm/"
            f"transparent_hugepage/{setting}'\n"}


def _wants(name: str) -> dict[str, str]:
    return {f"/etc/systemd/system/multi-user.target.wants/{name}":
            f"/etc/systemd/system/{name}"}


def test_later_mechanisms_win(make_root) -> None:
    files = {"/boot/config-6.1.0": "CONFIG_TRANSPARENT_HUGEPAGE_ALWAYS=y\n",
             "/boot/grub/grub.cfg": GRUB_CFG % "transparent_hugepage=never"}
    b = boot_thp(Host(str(make_root(files))), "enabled", ["madvise"])
    assert (b.value, b.explicit) == ("never", True)
    assert [e.source for e in b.evidence] == ["boot/config-6.1.0:1", "boot/grub/grub.cfg:2"]
    files.update(_unit("t.service", "madvise"))
    b = boot_thp(Host(str(make_root(files, _wants("t.service")))), "enabled", ["madvise"])
    assert b.value == "madvise" and b.source == "t.service (etc/systemd/system/t.service:2)"
    assert b.competing == []
    files.update({**TUNED_ENABLED, "/etc/tuned/active_profile": "p\n",
                  "/etc/tuned/p/tuned.conf": "[vm]\ntransparent_hugepages=always\n"})
    b = boot_thp(Host(str(make_root(files, {**_wants("t.service"), **TUNED_LINK}))),
                 "enabled", ["madvise"])
    assert b.value == "always"
    assert b.competing == ["tuned profile p [vm] transparent_hugepages "
                           "(etc/tuned/p/tuned.conf:2) sets always: change it in the tuned "
                           "profile"]


def test_defrag_default_and_the_fix_unit_is_not_competing(make_root) -> None:
    b = boot_thp(Host(str(make_root({}))), "defrag", ["never"])
    assert (b.value, b.source, b.explicit) == ("madvise", "kernel default (since 4.6)", False)
    name = FIX_UNIT.rsplit("/", 1)[1]
    other = {**_unit(name, "always", "defrag"), **_unit("o.service", "defer", "defrag")}
    b = boot_thp(Host(str(make_root(other, {**_wants(name), **_wants("o.service")}))),
                 "defrag", ["never"])
    assert b.competing == ["o.service (etc/systemd/system/o.service:2) sets defer: change or "
                           "disable it"]


def test_unknown_default_is_named_only_when_nothing_sets_it(make_root) -> None:
    b = boot_thp(Host(str(make_root({}))), "enabled", ["madvise"])
    assert b.value is None and [e.kind for e in b.evidence] == ["default"]
    b = boot_thp(Host(str(make_root(_unit("t.service", "madvise"), _wants("t.service")))),
                 "enabled", ["madvise"])
    assert b.value == "madvise" and [e.kind for e in b.evidence] == ["file"]
