"""udev rules loading: processing order, masking, and the files a lookup may skip."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.udev import files as udev
from aiaudit.linux.udev import rules as up

RULES = {
    # a write behind a GOTO that skips it for nvme disks, and a later one that wins
    "/usr/lib/udev/rules.d/60-block.rules":
        'KERNEL=="nvme*", GOTO="nvme_end"\n'
        'ATTR{queue/scheduler}="bfq"\n'
        'LABEL="nvme_end"\n'
        'KERNEL=="sd*", ATTR{queue/read_ahead_kb}="4096"\n',
    # the attribute name split by a continuation: udev joins it with a space, so it is
    # not an assignment of queue/scheduler (and this file is still parsed)
    "/etc/udev/rules.d/61-split.rules":
        'KERNEL=="nvme*", ATTR{queue/sched\\\nuler}="kyber"\n',
    # names neither attribute: never parsed when only those are asked for
    "/usr/lib/udev/rules.d/70-other.rules":
        'SUBSYSTEM=="net", ACTION=="add", NAME="eth0"\n'
        'KERNEL=="nvme*", GOTO="x"\n'
        'this is not a rule\n',
    "/etc/udev/rules.d/80-late.rules":
        'SUBSYSTEM=="block", KERNEL=="nvme*", ATTR{queue/scheduler}="none"\n',
    "/etc/udev/rules.d/90-binary.rules": "ATTR{queue/scheduler}=\x00\n",
}


def test_a_lookup_finds_the_writes_of_a_full_parse(make_root) -> None:
    host = Host(str(make_root(RULES)), live=False)
    full = udev.load(host)
    for attrs in (("queue/scheduler",), ("queue/read_ahead_kb", "bdi/read_ahead_kb")):
        some = udev.load(host, attrs)
        assert some.files == full.files and some.problems == full.problems
        assert "/usr/lib/udev/rules.d/70-other.rules" not in {r.file for r in some.rules}
        for name in ("nvme0n1", "sda"):
            dev = up.Device(name)
            for attr in attrs:
                assert up.attr_writes(some.rules, dev, attr) == \
                    up.attr_writes(full.rules, dev, attr)
    got = up.attr_writes(udev.load(host, ("queue/scheduler",)).rules, up.Device("nvme0n1"),
                         "queue/scheduler")
    assert [w.value for w in got] == ["none"]  # the GOTO skipped bfq; kyber is no write
    assert any("90-binary.rules" in p for p in full.problems)


def test_the_full_parse_keeps_the_warnings_of_every_file(make_root) -> None:
    host = Host(str(make_root(RULES)), live=False)
    assert any("70-other.rules:3" in w for w in udev.load(host).warnings)
    assert not any("70-other.rules" in w
                   for w in udev.load(host, ("queue/scheduler",)).warnings)
