"""Reading and summarising the kernel log (:mod:`aiaudit.linux.kmsg.log`): snapshot files,
the live device, windows, ``--state`` cursors, bounds."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from aiaudit.core.errors import LiveStateUnavailable, ParseError
from aiaudit.core.host import Host
from aiaudit.linux.kmsg import log
from aiaudit.linux.kmsg.catalogue import shipped

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kmsg"
PATTERNS = tuple((n, m) for n, m, _x, _a in shipped().nvrm)
BOOT = "6e4b0b6c-1b33-4cf7-9a8e-6b7c0c1f7d11"


def snapshot(tmp: Path, kmsg: str | bytes, uptime: str | None = None,
             boot: str | None = BOOT) -> Host:
    """A --live snapshot root carrying ``dev/kmsg`` (and /proc/uptime, boot_id)."""
    (tmp / "dev").mkdir(parents=True, exist_ok=True)
    data = kmsg.encode() if isinstance(kmsg, str) else kmsg
    (tmp / "dev/kmsg").write_bytes(data)
    if uptime is not None:
        (tmp / "proc").mkdir(exist_ok=True)
        (tmp / "proc/uptime").write_text(f"{uptime} 12.0\n")
    if boot is not None:
        (tmp / "proc/sys/kernel/random").mkdir(parents=True, exist_ok=True)
        (tmp / "proc/sys/kernel/random/boot_id").write_text(boot + "\n")
    return Host(str(tmp), live=True)


def test_a_snapshot_is_summarised_per_fault(tmp_path: Path) -> None:
    host = snapshot(tmp_path, (FIXTURES / "xid79-off-bus.kmsg").read_bytes())
    k = log.load(host, PATTERNS)
    assert k.source == "dev/kmsg" and k.records == 6  # continuation lines are not records
    a = k.faults[("xid", "79", "0000:2b:00.0")]
    assert (a.count, a.first_usec, a.last_seq) == (1, 31855221, 1403)
    assert a.sample == "NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus."
    assert ("nvrm", "off_bus", "0000:2b:00.0") in k.faults
    assert k.cursor == log.Cursor(BOOT, 1405)
    assert k.data()[log.CURSOR_KEY] == {"boot_id": BOOT, "seq": 1405}


def test_the_log_is_read_once_per_scan(tmp_path: Path) -> None:
    host = snapshot(tmp_path, "6,1,2,-;x\n")
    assert log.load(host, PATTERNS) is log.load(host, PATTERNS)


def test_offline_and_a_snapshot_without_the_file_are_not_applicable(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    with pytest.raises(LiveStateUnavailable, match="offline"):
        log.load(Host(str(tmp_path)), PATTERNS)
    with pytest.raises(LiveStateUnavailable, match="no dev/kmsg"):
        log.load(Host(str(tmp_path), live=True), PATTERNS)


def test_a_dmesg_text_dump_is_not_read_as_an_empty_log(tmp_path: Path) -> None:
    host = snapshot(tmp_path, "\n[   31.855221] NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen\n")
    with pytest.raises(ParseError, match=r"dev/kmsg:2: not a /dev/kmsg record"):
        log.load(host, PATTERNS)


def test_garbage_after_a_good_first_record_is_skipped(tmp_path: Path) -> None:
    host = snapshot(tmp_path, "6,1,2,-;ok\nNVRM: Xid (PCI:0000:2b:00): 79, x\n"
                              "x,y,z,-;NVRM: Xid (PCI:0000:2b:00): 79, x\n"
                              "4,9,10,-;NVRM: Xid (PCI:0000:2b:00): 79, real\n")
    k = log.load(host, PATTERNS)
    assert k.faults[("xid", "79", "0000:2b:00.0")].count == 1


def test_escaped_bytes_are_undone_for_display_only(tmp_path: Path) -> None:
    host = snapshot(tmp_path, "4,1,2,-;NVRM: Xid (PCI:0000:2b:00): 79, a\\x1b[31mb\\x0a\n")
    a = log.load(host, PATTERNS).faults[("xid", "79", "0000:2b:00.0")]
    assert "\x1b" not in a.sample and "\n" not in a.sample


def _xids(times_s: list[float], code: int = 13, dev: str = "0000:3b:00") -> str:
    return "".join(f"4,{i + 10},{int(t * 1e6)},-;NVRM: Xid (PCI:{dev}): {code}, pid=1, x\n"
                   for i, t in enumerate(times_s))


def test_windows_count_only_recent_events(tmp_path: Path) -> None:
    # 5 events an hour after boot, 3 in the last minute before now (uptime 7200 s)
    host = snapshot(tmp_path, _xids([3600] * 5 + [7150, 7160, 7170]), uptime="7200.00")
    k = log.load(host, PATTERNS)
    a = k.faults[("xid", "13", "0000:3b:00.0")]
    assert k.window_count(a, 0) == 8
    assert k.window_count(a, 60) == 3
    assert k.window_count(a, 7200) == 8
    assert k.now_usec == 7_200_000_000


def test_without_uptime_now_is_the_newest_record(tmp_path: Path) -> None:
    host = snapshot(tmp_path, _xids([10, 20]) + "6,99,500000000,-;later\n")
    k = log.load(host, PATTERNS)
    assert k.now_usec == 500_000_000
    assert k.window_count(k.faults[("xid", "13", "0000:3b:00.0")], 100) == 0


def _previous(boot: str, seq: int) -> SimpleNamespace:
    f = SimpleNamespace(rule_id="X", result=SimpleNamespace(
        data={log.CURSOR_KEY: {"boot_id": boot, "seq": seq}}, subject="kernel log"))
    return SimpleNamespace(findings=[f])


def test_state_cursor_of_the_same_boot_starts_after_it(tmp_path: Path) -> None:
    text = _xids([1, 2, 3])  # seq 10, 11, 12
    k = log.load(snapshot(tmp_path / "a", text), PATTERNS, _previous(BOOT, 11))  # type: ignore[arg-type]
    assert k.faults[("xid", "13", "0000:3b:00.0")].count == 1
    assert k.since == log.Cursor(BOOT, 11) and k.cursor == log.Cursor(BOOT, 12)
    # nothing new: no fault, and the cursor stays
    k = log.load(snapshot(tmp_path / "b", text), PATTERNS, _previous(BOOT, 12))  # type: ignore[arg-type]
    assert not k.faults and k.cursor == log.Cursor(BOOT, 12)
    # another boot: the previous cursor does not apply
    k = log.load(snapshot(tmp_path / "c", text), PATTERNS, _previous("other", 11))  # type: ignore[arg-type]
    assert k.faults[("xid", "13", "0000:3b:00.0")].count == 3 and k.since is None


def test_a_snapshot_bigger_than_the_cap_is_read_from_its_newest_part(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log, "MAX_BYTES", 4096)
    old = _xids([1.0] * 200, code=79, dev="0000:1a:00")
    new = "".join(f"4,{1000 + i},{9_000_000 + i},-;NVRM: Xid (PCI:0000:3b:00): 13, x\n"
                  for i in range(20))
    k = log.load(snapshot(tmp_path, old + new), PATTERNS)
    assert k.truncated and k.data()["truncated"]
    assert k.faults[("xid", "13", "0000:3b:00.0")].count == 20  # the newest are all there
    assert k.faults.get(("xid", "79", "0000:1a:00.0"), None) is None or \
        k.faults[("xid", "79", "0000:1a:00.0")].count < 200


def test_distinct_faults_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log, "MAX_KEYS", 5)
    text = "".join(f"4,{i},{i},-;NVRM: Xid (PCI:0000:3b:00): {i}, x\n" for i in range(1, 20))
    k = log.load(snapshot(tmp_path, text), PATTERNS)
    assert len(k.faults) == 5 and k.dropped_keys == 14


def test_the_live_log_of_this_machine_reads(tmp_path: Path) -> None:
    try:
        os.close(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        pytest.skip("/dev/kmsg cannot be opened here")
    k = log.load(Host("/", live=True), PATTERNS)
    assert k.source == "/dev/kmsg" and k.records > 0 and k.now_usec > 0
    assert k.cursor is None or k.cursor.seq >= 0


def test_a_file_without_newlines_is_bounded_and_an_error(tmp_path: Path) -> None:
    """Zeros (a sparse or broken file): no line is kept past MAX_LINE, and a log with no
    record at all is an error, not an empty pass."""
    host = snapshot(tmp_path, b"\0" * (3 << 20))
    with pytest.raises(ParseError, match="no /dev/kmsg record"):
        log.load(host, PATTERNS)


def test_blocks_drop_overlong_lines() -> None:
    from aiaudit.linux.kmsg import records as rec

    got = list(rec.blocks([b"x" * (rec.MAX_LINE + 10), b"y\n6,1,2,-;ok\n"]))
    assert all(len(b) <= rec.MAX_LINE + 20 for b in got)
    assert got[-1].endswith(b"6,1,2,-;ok\n")
