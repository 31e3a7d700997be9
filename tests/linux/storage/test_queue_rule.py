"""aiaudit.linux.storage.queue_rule.decide: the status of one disk's queue attribute."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Aspect, Status
from aiaudit.linux.storage.boot_value import Boot
from aiaudit.linux.storage.disks import Disk, offline_disks
from aiaudit.linux.storage.queue_rule import QueueAttr, boot_text, decide

SPEC = QueueAttr(what="I/O scheduler", attr="queue/scheduler", read=lambda d: None,
                 ok=lambda d, v: v == "none", want=lambda d: "one of none",
                 boot=lambda d: Boot(None, "", False), fix=lambda d: "none")
DISK = Disk("nvme0n1", "nvme", "nvme0n1", "/sys/block/nvme0n1")
DEFAULT = Boot("none", "kernel default", False)
RULE = Boot("bfq", "udev etc/udev/rules.d/60-s.rules:1", True)
DOUBT = Boot("none", "kernel default", False, undecided=(
    "etc/udev/rules.d/60-s.rules:1 may set bfq (cannot decide ENV{ID_MODEL}==\"x\")",),
    undecided_values=("bfq",))


@pytest.mark.parametrize(("runtime", "boot", "persist", "want"), [
    ("none", DEFAULT, True, (Status.PASS, Aspect.RUNTIME)),
    ("bfq", DEFAULT, True, (Status.FAIL, Aspect.RUNTIME)),
    ("none", RULE, True, (Status.FAIL, Aspect.DRIFT)),
    ("none", RULE, False, (Status.PASS, Aspect.RUNTIME)),      # the live value is enough
    ("bfq", RULE, False, (Status.FAIL, Aspect.PERSISTED)),
    ("none", DOUBT, True, (Status.PASS, Aspect.RUNTIME)),      # right now: not an error
    ("bfq", DOUBT, True, (Status.ERROR, None)),
])
def test_live(runtime: str, boot: Boot, persist: bool, want: tuple) -> None:
    d = decide(SPEC, DISK, runtime, boot, live=True, persist=persist)
    assert (d.status, d.aspect) == want


def test_offline_and_errors() -> None:
    (nvme,) = offline_disks(["nvme"])
    d = decide(SPEC, nvme, None, DEFAULT, live=False, persist=True)
    assert (d.status, d.aspect) == (Status.PASS, Aspect.PERSISTED)
    assert d.message.startswith("I/O scheduler of NVMe namespaces (as for nvme0n1) at boot")
    d = decide(SPEC, nvme, None, DOUBT, live=False, persist=True)
    assert d.status is Status.ERROR and d.message.endswith(boot_text(DOUBT))
    assert "undecided offline: etc/udev/rules.d/60-s.rules:1 may set bfq" in d.message
    # an undecidable rule that writes an allowed value cannot change the answer
    same = Boot("none", "kernel default", False, undecided=("x",), undecided_values=("none",))
    assert decide(SPEC, nvme, None, same, live=False, persist=True).status is Status.PASS
    broken = Boot("none", "kernel default", False, problems=("60-x.rules: not readable",))
    d = decide(SPEC, nvme, None, broken, live=False, persist=True)
    assert d.status is Status.ERROR and "udev rules cannot be read: 60-x.rules" in d.message
