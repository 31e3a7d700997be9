"""The ``/dev/kmsg`` record format (:mod:`aiaudit.linux.kmsg.records`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.kmsg import records as rec


def test_a_record_header() -> None:
    got = rec.parse_header(b"4,1403,31855221,-;NVRM: Xid (PCI:0000:2b:00): 79, x")
    assert got == (rec.Header(4, 1403, 31855221), b"NVRM: Xid (PCI:0000:2b:00): 79, x")
    # facility bits: prio 30 = daemon.info; later kernels add fields after FLAGS
    assert rec.parse_header(b"30,7,8,c,caller=T1;x") == (rec.Header(6, 7, 8), b"x")


@pytest.mark.parametrize("line", [b"", b" SUBSYSTEM=pci", b"[ 31.8] NVRM: x", b"4,1;x",
                                  b"a,b,c,-;x", b"4,-1,2,-;x", b"4,1,2"])
def test_not_a_record(line: bytes) -> None:
    assert rec.parse_header(line) is None


@given(st.binary(max_size=200))
def test_any_bytes_give_a_header_or_none(data: bytes) -> None:
    got = rec.parse_header(data)
    assert got is None or (got[0].seq >= 0 and got[0].usec >= 0 and 0 <= got[0].level <= 7)


def test_records_are_counted_without_continuation_lines() -> None:
    block = b"6,1,2,-;a\n SUBSYSTEM=pci\n DEVICE=+pci:x\n6,2,3,-;b\n"
    assert rec.count_records(block) == 2
    assert rec.count_records(b" DEVICE=+pci:x\n6,2,3,-;b") == 1


def test_blocks_are_whole_lines_whatever_the_chunks() -> None:
    text = b"6,1,2,-;first\n6,2,3,-;second line\n6,3,4,-;third"
    for size in (1, 3, 7, 100):
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        got = list(rec.blocks(chunks))
        assert b"".join(got) == text
        assert all(b.endswith(b"\n") for b in got[:-1])


def test_the_format_check_names_file_and_line() -> None:
    with pytest.raises(ParseError, match=r"dev/kmsg:3: not a /dev/kmsg record"):
        rec.check_format(b"Dec  1 kernel: NVRM", "dev/kmsg", 3)
    rec.check_format(b"6,1,2,-;ok", "dev/kmsg", 1)


def test_escapes_are_undone_for_display() -> None:
    assert rec.unescape(b"a\\x41b\\x0ac") == "aAb c"
    assert rec.unescape(b"plain") == "plain"
