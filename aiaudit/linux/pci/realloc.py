"""What the kernel command line makes of PCI resource reallocation (``pci=realloc``).

Source: drivers/pci/pci.c ``pci_setup`` (each ``pci=`` parameter is split at commas; a word
``realloc=<x>`` calls ``pci_realloc_get_opt(x)``, any other word starting with
``realloc`` means ``on``) and drivers/pci/setup-bus.c ``pci_realloc_get_opt`` (``off...``
disables, ``on...`` enables, anything else leaves the setting alone); the last word wins.
Without one, ``CONFIG_PCI_REALLOC_ENABLE_AUTO`` lets the kernel reallocate when SR-IOV BARs
were left unassigned by the firmware.  AMD's MI300X tuning guide asks for
``pci=realloc=off`` so that every GPU is detected unambiguously.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from aiaudit.linux.boot.loaders import Param


def realloc(params: Iterable[Param]) -> tuple[str, Param] | None:
    """``("off" | "on", the deciding parameter)`` from the ``pci=`` words of a command line,
    or ``None`` when none sets reallocation."""
    got: tuple[str, Param] | None = None
    for prm in params:
        if prm.key != "pci" or not prm.value:
            continue
        for word in prm.value.split(","):
            if word.startswith("realloc="):
                v = word[len("realloc="):]
                if v.startswith("off"):
                    got = ("off", prm)
                elif v.startswith("on"):
                    got = ("on", prm)
            elif word.startswith("realloc"):
                got = ("on", prm)
    return got
