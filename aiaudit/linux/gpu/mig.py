"""MIG mode and layout per GPU, from ``nvidia-smi -q -x``.

``mig_mode/current_mig`` and ``pending_mig`` (``Enabled``/``Disabled``; ``N/A`` on GPUs
without MIG, absent before driver 450): a pending value other than the current one takes
effect only at the next GPU reset, so the GPU runs in a mode nobody chose last.
``mig_devices/mig_device`` lists the MIG devices (GPU instance id, compute instance id, SM
count, memory); the profile name is not in the document, so a layout is described by the
instances' count and memory sizes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiaudit.core.startup.records import record
from aiaudit.linux.gpu.smidoc import gpu_label, mib, text

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET


@record
class MigState:
    """One GPU's MIG mode and devices."""

    subject: str
    name: str
    current: str | None
    """``Enabled``/``Disabled``; ``None``: the GPU has no MIG (``N/A``) or the driver
    predates it."""
    pending: str | None
    instances: tuple[tuple[str, int | None], ...] = ()
    """``(gpu instance id, memory MiB)`` per MIG device, in document order."""


def mig_states(doc: ET.Element) -> list[MigState]:
    """Every GPU's MIG state, in document order."""
    out = []
    for g in doc.findall("gpu"):
        subject, name = gpu_label(g)
        inst = tuple((text(d, "gpu_instance_id") or "?", mib(text(d, "fb_memory_usage/total")))
                     for d in g.findall("mig_devices/mig_device")[:128])
        out.append(MigState(subject, name, text(g, "mig_mode/current_mig"),
                            text(g, "mig_mode/pending_mig"), inst))
    return out
