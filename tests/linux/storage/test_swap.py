"""aiaudit.linux.storage.swap: fstab swap lines, .swap units, zram-generator."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.storage import swap

GEN = {"/usr/lib/systemd/system-generators/zram-generator": "#!/bin/sh\n"}


def test_fstab_swaps_skip_noauto() -> None:
    text = "/dev/sda2 none swap sw 0 0\n/swapfile none swap noauto 0 0\nUUID=1 / ext4 x 0 1\n"
    assert [m.spec for m in swap.fstab_swaps(text)] == ["/dev/sda2"]


def test_parse_zram_sections_and_later_files() -> None:
    sections: dict[str, swap.ZramSection] = {}
    swap.parse_zram("[zram0]\nzram-size = ram / 2\n[zram1]\nfs-type = ext4\n"
                    "[zram2]\nzram-fraction=0\n", "/usr/lib/systemd/zram-generator.conf",
                    sections)
    assert {k: v[3] for k, v in sections.items()} == {"zram0": True, "zram1": False,
                                                       "zram2": False}
    # a drop-in names the section again: its header is the evidence, the state is kept
    swap.parse_zram("[zram1]\n# fs-type = swap\n", "/etc/x.conf", sections)
    assert sections["zram1"] == ("/etc/x.conf", 1, "zram1", False)


def test_zram_swaps_need_the_generator_and_an_unmasked_config(make_root) -> None:
    conf = {"/usr/lib/systemd/zram-generator.conf": "[zram0]\n"}
    assert swap.zram_swaps(Host(str(make_root(conf)))) == []
    assert swap.zram_swaps(Host(str(make_root({**conf, **GEN})))) == [
        ("/usr/lib/systemd/zram-generator.conf", 1, "zram0")]
    masked = make_root({**conf, **GEN},
                       links={"/etc/systemd/zram-generator.conf": "/dev/null"})
    assert swap.zram_swaps(Host(str(masked))) == []
    dropin = {**GEN, "/etc/systemd/zram-generator.conf.d/10-z.conf": "[zram3]\n"}
    assert swap.zram_swaps(Host(str(make_root(dropin)))) == [
        ("/etc/systemd/zram-generator.conf.d/10-z.conf", 1, "zram3")]


def test_enabled_swap_units_first_link_unmasked(make_root) -> None:
    root = make_root({
        "/etc/systemd/system/swap.target.wants/dev-sdb1.swap": "[Swap]\n",
        "/usr/lib/systemd/system/swap.target.wants/dev-sdb1.swap": "[Swap]\n",
        "/usr/lib/systemd/system/local-fs.target.requires/dev-sdc1.swap": "[Swap]\n",
        "/usr/lib/systemd/system/multi-user.target.wants/x.service": "[Service]\n",
        "/usr/lib/systemd/system/swap.target.wants/dev-sdd1.swap": "[Swap]\n"},
        links={"/run/systemd/system/dev-sdd1.swap": "/dev/null"})
    assert swap.enabled_swap_units(Host(str(root))) == [
        ("dev-sdb1.swap", "/etc/systemd/system/swap.target.wants"),
        ("dev-sdc1.swap", "/usr/lib/systemd/system/local-fs.target.requires")]
