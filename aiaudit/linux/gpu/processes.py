"""What runs on each GPU and how much memory it holds, from ``nvidia-smi -q -x``.

Per ``<gpu>``: ``processes/process_info`` (``pid``, ``type``, ``process_name``,
``used_memory``; ``gpu_instance_id``/``compute_instance_id`` under MIG) and
``fb_memory_usage`` (``total``, ``reserved`` from driver ~510, ``used``, ``free``, in MiB).
``type`` is ``C`` (compute), ``G`` (graphics) or ``C+G``; vGPU guests and processes in other
PID namespaces show ``used_memory`` N/A or are not listed at all, which is why the memory
in use is judged beside the list: a container's leftover process holds memory that no
listed process explains (``telegraf-rtx-3080-v13.xml`` in the corpus: 9184 MiB used, no
process).  ``used`` excludes ``reserved`` (the driver's own) on drivers that report it;
idle data-center GPUs show 0-50 MiB (H100 0 MiB on 535; A100 with MIG 50 MiB).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiaudit.core.startup.records import record
from aiaudit.linux.gpu.smidoc import gpu_label, mib, text

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

MAX_LISTED = 64
"""Processes kept per GPU (a hostile document cannot make the result grow)."""


@record
class GpuProcess:
    """One ``process_info``."""

    pid: str
    type: str
    name: str
    used_mib: int | None

    @property
    def compute(self) -> bool:
        """A CUDA (compute) process: type ``C`` or ``C+G`` (``M``/``M+C`` for MPS)."""
        return "C" in self.type.upper().split("+") or self.type.upper().startswith("M")


@record
class GpuUse:
    """One GPU's processes and framebuffer use."""

    subject: str
    name: str
    processes: tuple[GpuProcess, ...]
    used_mib: int | None
    total_mib: int | None
    minor: int | None = None
    """``minor_number``: N of ``/dev/nvidiaN``, the index Slurm's gres.conf and
    ``SLURM_JOB_GPUS`` use."""


def _process(p: ET.Element) -> GpuProcess:
    return GpuProcess(pid=text(p, "pid") or "?", type=text(p, "type") or "?",
                      name=(text(p, "process_name") or "?")[:200],
                      used_mib=mib(text(p, "used_memory")))


def gpu_use(doc: ET.Element) -> list[GpuUse]:
    """Every GPU of the document, in document order."""
    out = []
    for g in doc.findall("gpu"):
        subject, name = gpu_label(g)
        procs = tuple(_process(p) for p in g.findall("processes/process_info")[:MAX_LISTED])
        minor = text(g, "minor_number")
        out.append(GpuUse(subject, name, procs, mib(text(g, "fb_memory_usage/used")),
                          mib(text(g, "fb_memory_usage/total")),
                          int(minor) if minor and minor.isascii() and minor.isdigit() else None))
    return out
