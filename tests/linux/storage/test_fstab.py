"""fstab, /proc/mounts, /proc/swaps, /proc/meminfo."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.storage import fstab


def test_fstab_entries_escapes_and_options() -> None:
    text = ("# comment\n\nUUID=1 / ext4 defaults 0 1\n"
            "tmpfs /dev/shm tmpfs rw,size=64m,size=2g 0 0\n"
            "/srv/my\\040disk /mnt/a\\040b xfs\n"
            "short line\n")
    m = fstab.parse(text)
    assert [x.target for x in m] == ["/", "/dev/shm", "/mnt/a b"]
    assert m[1].option("size") == "2g" and m[1].line == 4
    assert m[2].spec == "/srv/my disk" and m[2].options == ("defaults",)
    assert m[0].option("nope") is None


def test_swaps_and_meminfo() -> None:
    swaps = fstab.parse_swaps("Filename Type Size Used Priority\n/swapfile file 8388604 0 -2\n")
    assert swaps == [fstab.Swap("/swapfile", "file", 8388604)]
    assert fstab.parse_swaps("Filename Type Size Used Priority\n") == []
    assert fstab.meminfo_total_kb("MemTotal:   16318464 kB\nMemFree: 1 kB\n") == 16318464
    assert fstab.meminfo_total_kb("") is None


@given(st.text(max_size=200))
def test_never_crashes(text: str) -> None:
    for fn in (fstab.parse, fstab.parse_swaps, fstab.meminfo_total_kb):
        try:
            fn(text)
        except ParseError:
            pass
