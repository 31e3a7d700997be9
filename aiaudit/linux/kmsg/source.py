# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""Whether a scan has a kernel log to read at all, decided before the reader (:mod:`.log`)
and NVIDIA's catalogue are loaded: an offline scan, or a ``--live`` snapshot root without
``dev/kmsg``, has none, and its kernel-log rules skip without importing or parsing them."""

from __future__ import annotations

from aiaudit.core.errors import HostError, LiveStateUnavailable, NotFound
from aiaudit.core.host import Host

KMSG = "/dev/kmsg"
"""The kernel's log device (live) or, under a snapshot root, the file holding its records."""


def absent(host: Host) -> LiveStateUnavailable | None:
    """Why this scan has no kernel log (an offline scan; a snapshot root without
    ``dev/kmsg``), or ``None``: a cheap look the rules take before anything else."""
    if not host.live:
        return LiveStateUnavailable("the kernel log is live state: an offline scan has none "
                                    "(a --live snapshot root carries it as dev/kmsg)")
    if not host.is_real_root:
        try:
            host.stat(KMSG)
        except NotFound:
            return no_file()
        except HostError:
            return None  # the read says what is wrong with it
    return None


def no_file() -> LiveStateUnavailable:
    """The reason a snapshot root without its kernel log gives."""
    return LiveStateUnavailable("this snapshot root has no dev/kmsg (the kernel log as a "
                                "file: cat /dev/kmsg with a timeout)")
