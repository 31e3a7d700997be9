"""The kernel log: ``/dev/kmsg`` records read without consuming them, the hardware faults
they report (NVIDIA Xid and SXid, a GPU off the bus, NVRM errors, PCIe AER, machine checks,
amdgpu RAS), NVIDIA's Xid catalogue, and a bounded per-device summary shared by every rule
of a scan (:mod:`.log`).

Modules: :mod:`.records` (the ``/dev/kmsg`` record format), :mod:`.faults` (what a message
reports: pure), :mod:`.catalogue` (the shipped Xid/SXid catalogue and rule extensions),
:mod:`.source` (whether a scan has a log at all),
:mod:`.log` (reading through the Host, windows, the summary), :mod:`.devices` (what a PCI
address is: GPU, HCA, NVSwitch, a bridge above one).
"""
