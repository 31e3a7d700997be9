"""What a kernel message reports (:mod:`aiaudit.linux.kmsg.faults`), on real messages from
public bug reports (sources in tests/fixtures/kmsg/SOURCES.md)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.linux.kmsg.catalogue import shipped
from aiaudit.linux.kmsg.faults import Fault, bdf, classify, hit_lines

PATTERNS = tuple((n, m) for n, m, _x, _a in shipped().nvrm)

CASES = [
    ("NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.",
     Fault("xid", "79", "0000:2b:00.0")),
    ("NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp "
     "Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter",
     Fault("xid", "13", "0000:cb:00.0")),
    ("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, "
     "reset gpu to activate.", Fault("xid", "63", "0000:10:1c.0")),
    ("NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by "
     "previous Xid 149", Fault("xid", "45", "0000:dc:00.0")),
    ("NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
     Fault("nvrm", "off_bus", "0000:2b:00.0")),
    ("NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
     Fault("nvrm", "off_bus", "0000:01:00.0")),
    ("NVRM: GPU 0000:65:00.0: RmInitAdapter failed! (0x22:0x56:667)",
     Fault("nvrm", "init_failed", "0000:65:00.0")),
    ("NVRM: GPU at PCI:0000:2b:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae", None),
    ("nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Non-fatal, Link 00 Minion Link "
     "DLREQ interrupt", Fault("sxid", "nonfatal:22013", "0000:02:00.0")),
    ("nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Severity 0 Engine instance 00 "
     "Sub-engine instance 00", None),
    ("nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data {0x000001c0, 0x00bd5c8a}", None),
    ("pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction "
     "Layer, (Requester ID)", Fault("aer", "fatal", "0000:00:03.0")),
    ("pcieport 0000:80:1b.4: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), "
     "type=Transaction Layer, (Receiver ID)", Fault("aer", "nonfatal", "0000:80:1b.4")),
    ("pcieport 0000:00:1c.5: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
     "id=00e5(Receiver ID)", Fault("aer", "corrected", "0000:00:1c.5")),
    ("pcieport 0000:00:03.0: AER: Multiple Uncorrected (Fatal) error received: 0000:00:03.0",
     None),  # the root port's view of an error counted from its PCIe Bus Error line
    ("mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 4: a600000000020408",
     Fault("mce", "uncorrected", "cpu0")),  # UC (bit 61) set
    ("mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 9: 0000000000000000", None),
    ("mce: [Hardware Error]: Machine check events logged", Fault("mce", "logged", "-")),
    ("EDAC MC1: 1 CE memory scrubbing error on CPU_SrcID#1_Ha#0_Chan#0_DIMM#0 (channel:0 "
     "slot:0 page:0xee30a0)", Fault("mce", "corrected", "mc1")),
    ("Memory failure: 0x3f9a2: recovery action for dirty LRU page: Recovered",
     Fault("mce", "uncorrected", "-")),
    ("amdgpu 0000:0b:00.0: 1048560 uncorrectable hardware errors detected in umc block",
     Fault("amdgpu", "uncorrectable:umc", "0000:0b:00.0", 1048560)),
    ("amdgpu 0000:01:00.0: amdgpu: {3} socket: 0, die: 1, 2 new uncorrectable hardware "
     "errors detected in umc block", Fault("amdgpu", "uncorrectable:umc", "0000:01:00.0", 2)),
    ("amdgpu 0000:01:00.0: amdgpu: {3} socket: 0, die: 1, 2 uncorrectable hardware errors "
     "detected in total in umc block", None),
    ("amdgpu 0000:c3:00.0: amdgpu: no uncorrectable hardware errors detected in umc block",
     None),
    ("EXT4-fs (nvme0n1p2): re-mounted. Quota mode: none.", None),
]


@pytest.mark.parametrize(("text", "want"), CASES, ids=[c[0][:40] for c in CASES])
def test_classify_real_messages(text: str, want: Fault | None) -> None:
    assert classify(text, PATTERNS) == want


@pytest.mark.parametrize(("text", "want"), CASES, ids=[c[0][:40] for c in CASES])
def test_the_cheap_first_look_never_misses_a_fault(text: str, want: Fault | None) -> None:
    line = f"4,7,8,-;{text}".encode()
    block = b"6,1,2,-;boot\n" + line + b"\n SUBSYSTEM=pci\n6,9,9,-;after\n"
    if want is not None:
        assert [block[s:e] for s, e in hit_lines(block)][:1] == [line]


@pytest.mark.parametrize("block", [b"", b"NVRM", b"x\nNVRM\n", b"NVRM NVRM SXid\nEDAC MC1\n",
                                   b"\n\nardware \n"])
def test_hit_lines_are_whole_lines_in_order_each_once(block: bytes) -> None:
    got = hit_lines(block)
    assert got == sorted(set(got))
    for s, e in got:
        assert (s == 0 or block[s - 1:s] == b"\n") and b"\n" not in block[s:e]


def test_bdf_adds_the_function_of_a_gpu() -> None:
    assert bdf("0000:3B:00") == "0000:3b:00.0"
    assert bdf("0000:84:00.1") == "0000:84:00.1"


@given(st.text(max_size=300))
def test_any_text_gives_a_fault_or_none(text: str) -> None:
    got = classify(text, PATTERNS)
    assert got is None or isinstance(got, Fault)


@given(st.sampled_from([c[0] for c in CASES]), st.text(max_size=40))
def test_real_lines_with_noise_after_them_still_parse(text: str, tail: str) -> None:
    got = classify(text + tail, PATTERNS)
    assert got is None or isinstance(got, Fault)
