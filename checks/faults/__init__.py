"""Faults the kernel logged: NVIDIA Xid and SXid, GPU off the bus and NVRM errors, PCIe AER,
machine checks, amdgpu RAS (:mod:`aiaudit.linux.kmsg`)."""
