"""A node's class facts: what makes two nodes of one class the same hardware and stack.

GPU model, count, PCIe links and VBIOS; HCAs, their port rates and firmware; NVMe count;
memory, CPU model, sockets, logical CPUs and NUMA nodes; kernel release and command line;
BIOS; huge pages; the driver, CUDA toolkit and the packages that matter (driver, toolkit,
NCCL, container toolkit, Fabric Manager, OFED, ROCm).  :mod:`.facts` gathers them through
the :class:`~aiaudit.core.host.Host` (live facts from /proc and /sys, files-decided facts
from the package databases and module trees, also offline); :mod:`.compare` decides
whether a node matches a captured value.  ``aiaudit baseline`` writes them as a ruleset,
the ``inventory.fact`` check holds a node to it.
"""
