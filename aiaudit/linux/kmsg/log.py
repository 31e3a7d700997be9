# mypy: disallow-untyped-defs, disallow-incomplete-defs, check-untyped-defs, warn-return-any
"""The kernel log of a scan, read once and summarised per fault for every rule.

Where it comes from:

- scanning the real ``/`` live: the running kernel's buffer through
  :meth:`~aiaudit.core.host.Host.read_kmsg` (``/dev/kmsg``, non-blocking and non-consuming,
  as ``dmesg`` reads it; never ``dmesg -c``);
- a ``--live`` snapshot root: its ``dev/kmsg``, a regular file in the same record format
  (only its newest :data:`MAX_BYTES` are read when it is larger);
- an offline scan: nothing (the log is live state: the rules are not applicable).

What is kept is bounded whatever the log holds: per (kind, code, device) a count, the first
and last time and sequence number, and the times of the last :data:`RECENT` events (enough
to count any threshold up to that size in any window); at most :data:`MAX_KEYS` keys.  A
flood of a million identical Xid lines is one key: memory stays flat and time linear.

Windows: a rule counts events since boot (``window_s: 0``) or in the last ``window_s``
seconds before now (``/proc/uptime``; in a snapshot without it, the newest record's time).
With ``--state`` the previous scan's cursor (boot id and last sequence number, kept in each
result's data) makes the log start after it when the boot is the same: a fault is reported
by the scan that first sees it, and a node resumed after a drain is not drained again for
the same old line.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record
from aiaudit.linux.kmsg import records as rec
from aiaudit.linux.kmsg.faults import Fault, classify, hit_lines
from aiaudit.linux.kmsg.source import KMSG, absent, no_file

if TYPE_CHECKING:
    from aiaudit.core.model import RunResult

MAX_BYTES = 256 * 1024 * 1024
"""Most bytes of log read (the newest ones of a bigger snapshot file).  A kernel buffer is
``log_buf_len`` (128 KiB to a few MiB; 32 MiB is a large setting)."""
MAX_RECORDS = 4_000_000
MAX_KEYS = 4096
"""Most distinct (kind, code, device) kept; more are counted in ``dropped_keys``."""
RECENT = 256
"""Event times kept per key: thresholds up to this many events are exact in any window."""
_SEEN_MAX = 4096
"""Distinct matching messages whose classification is kept (a flood repeats one message:
it is decoded and classified once)."""
CURSOR_KEY = "kmsg_cursor"
"""Result data key of the log position a scan reached (read back by ``--state``)."""


@record(frozen=False)
class Agg:
    """Events of one (kind, code, device)."""

    count: int
    errors: int
    """Sum of the counts the messages report (amdgpu prints N errors per message)."""
    first_usec: int
    last_usec: int
    last_seq: int
    sample: str
    """The first message, unescaped (evidence)."""
    recent: deque[int]


@record
class Cursor:
    """Where a scan stopped reading: the boot and the last record's sequence number."""

    boot_id: str
    seq: int


@record
class KernelLog:
    """The summary every fault rule of a scan shares."""

    source: str
    """``/dev/kmsg`` (live) or ``dev/kmsg`` (a snapshot root's file)."""
    faults: Mapping[tuple[str, str, str], Agg]
    records: int
    now_usec: int
    truncated: bool
    """The newest part only: a snapshot file over :data:`MAX_BYTES`, or a cap reached."""
    cursor: Cursor | None
    """Where this scan stopped (``None``: no record, or no boot id)."""
    since: Cursor | None
    """The previous scan's cursor this log starts after (``--state``), if it applied."""
    dropped_keys: int = 0

    def window_count(self, a: Agg, window_s: float) -> int:
        """Events of ``a`` in the last ``window_s`` seconds (0: all); exact up to
        :data:`RECENT`, at least that many beyond."""
        if window_s <= 0:
            return a.count
        start = self.now_usec - int(window_s * 1_000_000)
        if a.first_usec >= start:
            return a.count
        return sum(1 for t in a.recent if t >= start)

    def data(self) -> dict[str, Any]:
        """What a result carries about the log (the cursor for ``--state``)."""
        out: dict[str, Any] = {"source": self.source, "records": self.records}
        if self.cursor is not None:
            out[CURSOR_KEY] = {"boot_id": self.cursor.boot_id, "seq": self.cursor.seq}
        if self.since is not None:
            out["since_seq"] = self.since.seq
        if self.truncated:
            out["truncated"] = True
        return out


def load(host: Host, patterns: tuple[tuple[str, str], ...],
         previous: RunResult | None = None) -> KernelLog:
    """The scan's kernel log summary (read once per scan and cursor).  Raises
    :class:`LiveStateUnavailable` in an offline scan or a snapshot root without
    ``dev/kmsg``, :class:`HostError` when the log cannot be read, ``ParseError`` when a
    snapshot's file is not in ``/dev/kmsg`` format."""
    boot = _boot_id(host)
    since = _previous_cursor(previous, boot)
    return host.memo(("kmsg.log", patterns, since),
                     lambda: _read(host, patterns, since, boot))


def _boot_id(host: Host) -> str | None:
    if not host.live:
        return None
    try:
        return host.read_text("/proc/sys/kernel/random/boot_id", cap=64).strip() or None
    except HostError:
        return None


def _previous_cursor(previous: RunResult | None, boot: str | None) -> Cursor | None:
    """The cursor a previous scan of the same boot left in any fault rule's result."""
    if previous is None or boot is None:
        return None
    for f in previous.findings:
        got = (f.result.data or {}).get(CURSOR_KEY) if isinstance(f.result.data, dict) \
            else None
        if isinstance(got, dict) and got.get("boot_id") == boot \
                and isinstance(got.get("seq"), int):
            return Cursor(boot, got["seq"])
    return None


def _read(host: Host, patterns: tuple[tuple[str, str], ...], since: Cursor | None,
          boot: str | None) -> KernelLog:
    missing = absent(host)
    if missing is not None:
        raise missing
    if host.is_real_root:
        source = KMSG
        blocks: Iterable[bytes] = host.read_kmsg(cap=MAX_BYTES, max_records=MAX_RECORDS)
        truncated_file, size = False, 0
    else:
        source = "dev/kmsg"
        blocks, truncated_file, size = _file_blocks(host)
    s = _Summary(patterns, since.seq if since else -1)
    s.feed(blocks, source)
    if size and not s.records:
        raise ParseError(f"no /dev/kmsg record (PRIO,SEQ,USEC,FLAGS;MESSAGE) in {size} "
                         "bytes", source=source)
    now = _uptime_usec(host)
    return KernelLog(
        source=source, faults=s.faults, records=s.records,
        now_usec=max(now if now is not None else 0, s.last_usec),
        truncated=truncated_file or s.records >= MAX_RECORDS,
        cursor=Cursor(boot, s.last_seq) if boot and s.last_seq >= 0 else
        (since if since else None),
        since=since, dropped_keys=s.dropped)


def _file_blocks(host: Host) -> tuple[Iterator[bytes], bool, int]:
    try:
        st = host.stat(KMSG)
    except NotFound:
        raise no_file() from None
    start = max(0, st.st_size - MAX_BYTES)

    def chunks() -> Iterator[bytes]:
        off = start
        while off < st.st_size:
            data = host.read_range(KMSG, off, min(1 << 20, st.st_size - off))
            if not data:
                return
            off += len(data)
            yield data

    def whole() -> Iterator[bytes]:
        it = rec.blocks(chunks())
        if start:  # the tail of a bigger file: drop the partial first line
            first = next(it, b"")
            yield first[first.find(b"\n") + 1:] if b"\n" in first else b""
        yield from it

    return whole(), bool(start), st.st_size


def _uptime_usec(host: Host) -> int | None:
    try:
        text = host.read_text("/proc/uptime", cap=128)
        return int(float(text.split()[0]) * 1_000_000)
    except (HostError, ValueError, IndexError):
        return None


class _Summary:
    """The streaming pass: block by block, only the lines a needle hits parsed and decoded."""

    def __init__(self, patterns: tuple[tuple[str, str], ...], after_seq: int) -> None:
        self.patterns = patterns
        self.after = after_seq
        self.faults: dict[tuple[str, str, str], Agg] = {}
        self.records = 0
        self.last_seq = -1
        self.last_usec = 0
        self.dropped = 0
        self._seen: dict[bytes, tuple[Fault | None, str]] = {}

    def feed(self, blocks: Iterable[bytes], source: str) -> None:
        """Summarise ``blocks`` (whole lines of ``source``): each block is searched in C for
        the :data:`~aiaudit.linux.kmsg.faults.NEEDLES`, and only the lines they hit are
        parsed and classified."""
        last = b""
        event = self._event
        for block in blocks:
            if not block:
                continue
            if not self.records:
                self._check_first(block, source)
            self.records += rec.count_records(block)
            for start, end in hit_lines(block):
                if block[start] != 0x20:  # not a continuation line
                    event(block[start:end])
            last = block
        self._last_record(last)

    def _check_first(self, block: bytes, source: str) -> None:
        """The first record line must be in the kmsg format (a dmesg dump is an error)."""
        for n, line in enumerate(block.split(b"\n", 64)[:64], start=1):
            if line and line[:1] != b" ":
                rec.check_format(line, source, n)
                return

    def _last_record(self, block: bytes) -> None:
        """The cursor: the sequence number and time of the newest record."""
        for line in reversed(block.rstrip(b"\n").rsplit(b"\n", 64)):
            parsed = rec.parse_header(line) if line[:1] != b" " else None
            if parsed is not None:
                self.last_seq = max(self.last_seq, parsed[0].seq)
                self.last_usec = max(self.last_usec, parsed[0].usec)
                return

    def _event(self, line: bytes) -> None:
        head, sep, raw = line.partition(b";")
        parts = head.split(b",", 3)
        try:
            seq, usec = int(parts[1]), int(parts[2])
        except (ValueError, IndexError):
            return
        if not sep or seq <= self.after or seq < 0 or usec < 0:
            return
        # an Xid line's fault is decided by "NVRM: Xid (PCI:...): CODE": a flood that
        # differs only in pid or text after it is classified once
        said = raw.split(b",", 1)[0] if raw.startswith(b"NVRM: Xid (") else raw
        hit = self._seen.get(said)
        if hit is None:  # a new message: a flood repeats one, classified once
            text = rec.unescape(raw)
            hit = (classify(text, self.patterns), text)
            if len(self._seen) >= _SEEN_MAX:
                self._seen.clear()
            self._seen[said] = hit
        f, text = hit
        if f is None:
            return
        key = (f.kind, f.code, f.device)
        a = self.faults.get(key)
        if a is None:
            if len(self.faults) >= MAX_KEYS:
                self.dropped += 1
                return
            a = self.faults[key] = Agg(0, 0, usec, usec, seq, text[:300],
                                       deque(maxlen=RECENT))
        a.count += 1
        a.errors += f.count
        a.last_usec = usec
        a.last_seq = seq
        a.recent.append(usec)
