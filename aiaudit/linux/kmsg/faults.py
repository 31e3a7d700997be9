# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""What a kernel message reports: pure functions from one record's message to a
:class:`Fault` (or ``None``: most messages report nothing).

Formats, as the drivers print them:

- NVIDIA Xid (``nv_report_error``, open-gpu-kernel-modules ``kernel-open/nvidia/nv.c``):
  ``NVRM: Xid (PCI:0000:3b:00): 79, pid=..., name=..., GPU has fallen off the bus.``; the
  address has no function number (a GPU is function 0).
- NVSwitch SXid: ``nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Fatal, ...``; one event
  is a first line (``Fatal`` / ``Non-fatal``) then ``Severity ...`` and ``Data {...}`` lines,
  which are not counted again.
- A GPU off the bus and other NVRM errors: ``NVRM: GPU at 0000:01:00.0 has fallen off the
  bus.``, ``NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.``, ``NVRM: GPU
  0000:65:00.0: RmInitAdapter failed! (0x22:0x56:667)`` (patterns from the catalogue).
- PCIe AER (``drivers/pci/pcie/aer.c``, ``aer_print_error``): ``pcieport 0000:00:03.0:
  PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, ...``; kernels since
  6.x say ``Uncorrectable (Non-Fatal)`` and ``Correctable``.  The device named before the
  message is the one whose AER registers hold the error; the ``error received`` lines (the
  root port's view of the same error) are not counted again.
- Machine checks (``arch/x86/kernel/cpu/mce/core.c``): ``mce: [Hardware Error]: Machine
  check events logged`` (errors the kernel logged, corrected ones in the common case), ``mce:
  [Hardware Error]: CPU 0: Machine Check: 0 Bank 4: a600000000020408`` (bit 61 of MCi_STATUS,
  UC, says uncorrected), ``Memory failure: 0x...: recovery action for ...`` and ``mce:
  Uncorrected hardware memory error in user-access at ...`` (an uncorrected memory error
  the kernel handled), EDAC ``EDAC MC1: 1 CE ...`` / ``1 UE ...``.
- amdgpu RAS (``amdgpu_ras.c``): ``amdgpu 0000:0b:00.0: amdgpu: 2 uncorrectable hardware
  errors detected in umc block`` and the newer ``{N} socket: 0, die: 1, 2 new uncorrectable
  hardware errors detected in umc block``; ``... detected in total in ...`` lines repeat a
  total and are not counted; ``no uncorrectable hardware errors`` is the all-clear.
"""

from __future__ import annotations

from typing import Sequence

from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

KINDS = ("xid", "sxid", "nvrm", "aer", "mce", "amdgpu")
"""Fault kinds, one rule family each."""

_BDF = r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)"

NEEDLES = (b"NVRM", b"SXid", b"Bus Error", b"ardware ", b"Memory failure", b"EDAC MC")
"""A cheap first look at the (escaped) messages: a line holding none of these reports no
fault.  They are searched with ``bytes.find`` over a whole block (a few instructions a byte,
against some 70 for a regular expression's alternation), and only the lines they hit are
parsed and classified.  ``ardware `` covers ``Hardware Error``, ``hardware errors
detected`` and ``hardware memory error``."""


def hit_lines(block: bytes) -> list[tuple[int, int]]:
    """(start, end) of each line of ``block`` that holds one of :data:`NEEDLES`, in order,
    each line once."""
    found: dict[int, int] = {}
    find, rfind = block.find, block.rfind
    size = len(block)
    for needle in NEEDLES:
        at = find(needle)
        while at >= 0:
            start = rfind(b"\n", 0, at) + 1
            end = find(b"\n", at)
            if end < 0:
                end = size
            found[start] = end
            at = find(needle, end)
    return sorted(found.items())


_XID = lazy_pattern(r"NVRM: Xid \((?:PCI:)?" + _BDF + r"\): (\d+),?\s*(.*)")
_SXID = lazy_pattern(r"SXid \((?:PCI:)?" + _BDF + r"\): (\d+), (.*)")
_NVRM_DEV = lazy_pattern(r"NVRM: GPU (?:at )?(?:PCI:)?" + _BDF)
_AER = lazy_pattern(r"(\S+) " + _BDF + r": (?:AER: )?PCIe Bus Error: severity=([^,]+)")
_MCE_BANK = lazy_pattern(r"mce: \[Hardware Error\]: CPU (\d+): Machine Check(?: Exception)?:"
                       r" \S+ Bank (\d+): ([0-9a-fA-F]+)")
_EDAC = lazy_pattern(r"EDAC MC(\d+): (\d+) (CE|UE) ")
_AMD = lazy_pattern(r"amdgpu " + _BDF + r": .*?(\d+) (new )?(uncorrectable|correctable|deferred)"
                  r" hardware errors detected in (\w+) block")


@record
class Fault:
    """One fault reported by one kernel message."""

    kind: str
    """One of :data:`KINDS`."""
    code: str
    """Xid number; ``fatal:N`` / ``nonfatal:N`` for SXid N; the AER severity (``fatal``,
    ``nonfatal``, ``corrected``); the machine-check class (``uncorrected``, ``logged``,
    ``corrected``); the amdgpu error kind and block (``uncorrectable:umc``); the NVRM
    pattern's name."""
    device: str
    """PCI address (``0000:3b:00.0``), ``cpuN`` / ``mcN`` for machine checks, ``-`` when the
    message names none."""
    count: int = 1
    """How many errors the message reports (amdgpu prints a count; else 1)."""


def bdf(addr: str) -> str:
    """A PCI address as sysfs names it: lower case, with a function (``.0`` for the
    ``0000:3b:00`` of an Xid line)."""
    addr = addr.lower()
    return addr if "." in addr else addr + ".0"


def classify(text: str, nvrm_patterns: Sequence[tuple[str, str]] = ()) -> Fault | None:
    """The fault ``text`` (one record's message) reports, or ``None``.  ``nvrm_patterns``:
    (name, substring) pairs of NVRM errors other than Xid (the catalogue's ``nvrm``)."""
    if "NVRM" in text:
        return _nvrm(text, nvrm_patterns)
    if "SXid" in text:
        m = _SXID().search(text)
        word = m.group(3).lower() if m else ""
        if m is None or not word.startswith(("fatal", "non-fatal", "non fatal")):
            return None  # a Severity/Data line of an event already counted
        sev = "fatal" if word.startswith("fatal") else "nonfatal"
        return Fault("sxid", f"{sev}:{m.group(2)}", bdf(m.group(1)))
    if "PCIe Bus Error" in text:
        m = _AER().search(text)
        if m is None:
            return None
        sev = m.group(3).lower()
        code = "nonfatal" if "non-fatal" in sev else "fatal" if "fatal" in sev else \
            "corrected" if sev.startswith("correct") else None
        return Fault("aer", code, bdf(m.group(2))) if code else None
    if "hardware errors detected" in text:
        m = _AMD().search(text)
        if m is None or int(m.group(2)) == 0:
            return None
        return Fault("amdgpu", f"{m.group(4)}:{m.group(5).lower()}", bdf(m.group(1)),
                     int(m.group(2)))
    return _machine_check(text)


def _nvrm(text: str, patterns: Sequence[tuple[str, str]]) -> Fault | None:
    m = _XID().search(text)
    if m is not None:
        return Fault("xid", m.group(2), bdf(m.group(1)))
    for name, needle in patterns:
        if needle in text:
            d = _NVRM_DEV().search(text)
            return Fault("nvrm", name, bdf(d.group(1)) if d else "-")
    return None


def _machine_check(text: str) -> Fault | None:
    if "mce: [Hardware Error]: Machine check events logged" in text:
        return Fault("mce", "logged", "-")
    m = _MCE_BANK().search(text)
    if m is not None:
        status = int(m.group(3), 16)
        if not status >> 63:
            return None  # VAL clear: nothing valid in the bank
        return Fault("mce", "uncorrected" if status >> 61 & 1 else "corrected",
                     f"cpu{m.group(1)}")
    if ("Memory failure: " in text and "recovery action" in text) \
            or "mce: Uncorrected hardware memory error" in text:
        return Fault("mce", "uncorrected", "-")
    m = _EDAC().search(text)
    if m is not None and int(m.group(2)):
        return Fault("mce", "uncorrected" if m.group(3) == "UE" else "corrected",
                     f"mc{m.group(1)}", int(m.group(2)))
    return None
