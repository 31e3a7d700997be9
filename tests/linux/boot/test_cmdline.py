"""aiaudit.linux.boot.cmdline: which command line the next boot gets."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.boot import cmdline as boot
from tests.checks.tuning_trees import GRUB_CFG


def test_boot_resolver_prefers_what_boots(make_root) -> None:
    files = {"/etc/default/grub": 'GRUB_CMDLINE_LINUX="a=1"\nGRUB_CMDLINE_LINUX_DEFAULT="b"\n',
             "/boot/grub/grub.cfg": GRUB_CFG % "a=0"}
    cfg = boot.load(Host(str(make_root(files))))
    assert cfg.loader == "grub" and cfg.booted.kind == "grub.cfg"
    assert cfg.booted.get("a").value == "0" and cfg.generator.get("a").value == "1"
    assert cfg.generator.evidence("a").source == "etc/default/grub:1"
    assert cfg.generator.text == "a=1 b"
