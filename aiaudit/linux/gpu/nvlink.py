"""NVLink link state and error counters, as ``nvidia-smi nvlink`` prints them.

``nvidia-smi nvlink --status`` (``-s``) prints, per GPU, a header line
``GPU <index>: <product name> (UUID: GPU-...)`` and one line per link:
``Link <n>: 26.562 GB/s`` (an active link and its per-direction rate; NVLink 1 to 5 print
20.000, 25.781, 25, 26.562, 53.125...) or ``Link <n>: <inactive>``.  A GPU without an active
link prints, instead of link lines, NVML's message ``NVML: Unable to retrieve NVLink
information as all links are inActive`` (a PCIe card without a bridge, or an NVSwitch GPU
whose links all failed to train); boards without NVLink print nothing for the GPU, or
``Device does not have or support Nvlink``.  Some builds put such a verdict on the header
line after the UUID.

``nvidia-smi nvlink --errorcounters`` (``-e``) prints one line per link and counter:
``Link <n>: <Counter name>: <value>``.  Drivers up to the Hopper generation print
``Replay Errors``, ``Recovery Errors`` and ``CRC Errors`` (the data link layer's transmit
replays, link recoveries — the link retrained — and receive CRC errors).  NVLink 5
(Blackwell) drivers print another set instead: ``Malformed packet Errors``, ``Buffer
overrun Errors``, ``Rx Errors``, ``Rx remote Errors``, ``Rx General Errors``, ``Local link
integrity Errors``, ``Tx discards``, ``Link recovery successful events``, ``Link recovery
failed events``, ``Total link recovery events``, ``Effective Errors``, ``Symbol Errors``,
``Effective BER``/``Symbol BER`` (not counts) and ``FEC Errors - <k>`` (codewords that
needed k symbol corrections: bucket 0 counts clean codewords, billions on a healthy link).
:func:`categories` maps both sets onto what the rules judge (:data:`CATEGORY`).

Parsing is bounded whatever the command prints: at most :data:`MAX_OUTPUT` characters,
:data:`MAX_LINES` lines, :data:`MAX_GPUS` GPUs and :data:`MAX_LINKS` links per GPU; anything
else raises :class:`~aiaudit.core.errors.ParseError` (parsers raise nothing else).  The
commands run once per scan each (:func:`status` and :func:`errors`, memoised on the
:class:`~aiaudit.core.host.Host`), only on the real ``/`` live, with a timeout.
"""

from __future__ import annotations

import re
from typing import Iterator, Mapping

from aiaudit.core.errors import CommandError, LiveStateUnavailable, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record

STATUS_ARGV = ("nvidia-smi", "nvlink", "--status")
ERRORS_ARGV = ("nvidia-smi", "nvlink", "--errorcounters")

MAX_OUTPUT = 4 * 1024 * 1024
"""Largest output parsed (8 GPUs x 18 links x 30 Blackwell counters is about 300 KiB)."""
MAX_LINES = 100_000
MAX_GPUS = 1024
MAX_LINKS = 64
"""NVLink 4/5 GPUs have 18 links; 64 leaves room for what comes next."""
MAX_VALUE = 2**63
"""Counters are 64-bit in NVML; a longer number is not a counter."""

_HEADER = re.compile(r"GPU (\d{1,6}):(.{0,1000})")
_UUID = re.compile(r"(.*?) ?\(UUID: (GPU-[0-9A-Za-z-]{1,64})\)(.*)")
_LINK = re.compile(r"Link (\d{1,4}): (.{0,400})")
_SPEED = re.compile(r"(\d{1,6}(?:\.\d{1,6})?) ?GB/s")
_COUNTER = re.compile(r"([A-Za-z][A-Za-z0-9 _/()-]{0,79}?)\s*:\s*(.{0,100})")
_INACTIVE = frozenset({"<inactive>", "inactive", "<down>", "down", "disabled", "off"})
_NO_LINKS = (("all links are inactive", "all links inactive"),
             ("does not have or support nvlink", "no NVLink"),
             ("not supported", "NVLink not supported"))

CATEGORY: Mapping[str, str] = {
    "replay errors": "replay",
    "recovery errors": "recovery",
    "link recovery failed events": "recovery",
    "crc errors": "crc",
    "crc flit errors": "crc",
    "crc data errors": "crc",
    "symbol errors": "crc",
    "malformed packet errors": "packet",
    "buffer overrun errors": "packet",
    "rx errors": "packet",
    "rx remote errors": "packet",
    "rx general errors": "packet",
    "local link integrity errors": "packet",
    "tx discards": "packet",
    "effective errors": "packet",
}
"""Counter name (lower case) -> what the rules judge: ``recovery`` (``Recovery Errors``: the
link went into recovery and retrained; NVLink 5: ``Link recovery failed events``),
``replay`` (transmit replays after a receive error), ``crc`` (receive CRC errors, NVLink 5's
raw ``Symbol Errors``: corrected by replay or FEC), ``packet`` (NVLink 5 errors that FEC and
replay did not absorb).  NVLink 5's successful and total recovery events (NVIDIA DCGM only
warns on successful ones), ``FEC Errors - k`` and the BER values are not judged."""

JUDGED = ("recovery", "replay", "crc", "packet")


@record
class Link:
    """One line of ``--status``."""

    index: int
    speed_gbps: float | None
    """Per-direction rate of an active link; ``None`` when inactive or unknown."""
    active: bool | None
    """``None``: a value this parser does not know (kept in :attr:`raw`)."""
    raw: str


@record
class GpuLinks:
    """One GPU of ``--status``."""

    index: int
    name: str
    uuid: str | None
    links: tuple[Link, ...]
    note: str | None = None
    """Why the GPU lists no link: ``all links inactive``, ``no NVLink``, ``NVLink not
    supported``, or the first line nvidia-smi printed that is not a link line."""

    @property
    def subject(self) -> str:
        """``GPU <index>`` with the UUID when printed."""
        return f"GPU {self.index} ({self.uuid})" if self.uuid else f"GPU {self.index}"

    @property
    def active(self) -> tuple[Link, ...]:
        """The active links."""
        return tuple(ln for ln in self.links if ln.active)

    @property
    def unknown(self) -> tuple[Link, ...]:
        """Links whose state this parser could not read."""
        return tuple(ln for ln in self.links if ln.active is None)


@record
class GpuCounters:
    """One GPU of ``--errorcounters``: per link, its counters as printed."""

    index: int
    name: str
    uuid: str | None
    links: tuple[tuple[int, tuple[tuple[str, int], ...]], ...]

    @property
    def subject(self) -> str:
        """``GPU <index>`` with the UUID when printed."""
        return f"GPU {self.index} ({self.uuid})" if self.uuid else f"GPU {self.index}"


def _lines(text: str) -> list[str]:
    if len(text) > MAX_OUTPUT:
        raise ParseError(f"nvidia-smi nvlink output larger than {MAX_OUTPUT} characters")
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise ParseError(f"nvidia-smi nvlink output has more than {MAX_LINES} lines")
    return lines


def _verdict(text: str) -> str | None:
    low = text.lower()
    for needle, what in _NO_LINKS:
        if needle in low:
            return what
    return None


def _link(index: int, value: str) -> Link:
    v = value.strip()
    m = _SPEED.fullmatch(v)
    if m:
        return Link(index, float(m.group(1)), True, v)
    if v.lower() in _INACTIVE:
        return Link(index, None, False, v)
    return Link(index, None, None, v[:100])


class _Gpu:
    """A GPU block being read."""

    def __init__(self, m: re.Match[str]) -> None:
        self.index, rest = int(m.group(1)), m.group(2).strip()
        u = _UUID.fullmatch(rest)
        self.name, tail = (u.group(1).strip(), u.group(3).strip()) if u else (rest, "")
        self.uuid: str | None = u.group(2) if u else None
        self.note: str | None = (_verdict(tail) or tail[:200]) if tail else None
        if not u and _verdict(rest):  # a verdict after a header without a UUID
            self.note = _verdict(rest)
        self.links: dict[int, object] = {}


def _header(line: str, gpus: list[_Gpu], lineno: int) -> _Gpu | None:
    """A new GPU block when ``line`` is a header (``None`` otherwise)."""
    m = _HEADER.fullmatch(line) if line.startswith("GPU ") else None
    if m is None:
        return None
    if len(gpus) >= MAX_GPUS:
        raise ParseError(f"more than {MAX_GPUS} GPUs", line=lineno)
    gpu = _Gpu(m)
    gpus.append(gpu)
    return gpu


def _ignorable(line: str) -> bool:
    """Blank lines and old drivers' ``====STATUS====`` banners."""
    return not line or (line.startswith("==") and line.endswith("=="))


def _gpu_lines(text: str, what: str, gpus: list[_Gpu]) -> Iterator[tuple[int, _Gpu, str]]:
    """``(line number, GPU, stripped line)`` for each line under a GPU header of the output
    of ``nvidia-smi nvlink WHAT``: headers start a GPU (appended to ``gpus``), blank lines
    and banners are skipped, a line before any header is a :class:`ParseError`."""
    cur: _Gpu | None = None
    for n, raw in enumerate(_lines(text), 1):
        line = raw.strip()
        if _ignorable(line):
            continue
        new = _header(line, gpus, n)
        if new is not None:
            cur = new
            continue
        if cur is None:
            raise ParseError(f"not nvidia-smi nvlink {what} output: {line[:80]!r} before "
                             "any GPU header", line=n)
        yield n, cur, line


def parse_status(text: str) -> tuple[GpuLinks, ...]:
    """The GPUs of ``nvidia-smi nvlink --status`` output, in printed order.  Empty
    output gives no GPU (no NVLink-capable GPU, as some drivers print it)."""
    gpus: list[_Gpu] = []
    for n, cur, line in _gpu_lines(text, "--status", gpus):
        m = _LINK.fullmatch(line)
        if m is None:
            if cur.note is None:
                cur.note = _verdict(line) or line[:200]
            continue
        idx = int(m.group(1))
        if idx not in cur.links and len(cur.links) >= MAX_LINKS:
            raise ParseError(f"GPU {cur.index}: more than {MAX_LINKS} links", line=n)
        cur.links[idx] = _link(idx, m.group(2))
    return tuple(GpuLinks(g.index, g.name, g.uuid,
                          tuple(v for v in g.links.values() if isinstance(v, Link)),
                          g.note) for g in gpus)


def _count(value: str) -> int | None:
    v = value.strip()
    if v.isascii() and v.isdigit() and len(v) <= 19 and int(v) < MAX_VALUE:
        return int(v)
    return None


def parse_errors(text: str) -> tuple[GpuCounters, ...]:
    """The GPUs of ``nvidia-smi nvlink --errorcounters`` output: per link, every counter
    with an integer value (BER values and ``N/A`` are left out)."""
    gpus: list[_Gpu] = []
    for n, cur, line in _gpu_lines(text, "--errorcounters", gpus):
        m = _LINK.fullmatch(line)
        c = _COUNTER.fullmatch(m.group(2)) if m else None
        if m is None or c is None:
            continue
        idx = int(m.group(1))
        if idx not in cur.links and len(cur.links) >= MAX_LINKS:
            raise ParseError(f"GPU {cur.index}: more than {MAX_LINKS} links", line=n)
        counters = cur.links.setdefault(idx, {})
        value = _count(c.group(2))
        if isinstance(counters, dict) and value is not None and len(counters) < 64:
            counters[c.group(1).strip()] = value
    return tuple(GpuCounters(g.index, g.name, g.uuid, tuple(
        (k, tuple(v.items())) for k, v in g.links.items() if isinstance(v, dict) and v))
        for g in gpus)


def categories(counters: tuple[tuple[str, int], ...]) -> dict[str, int]:
    """One link's counters summed per judged category (:data:`CATEGORY`)."""
    out: dict[str, int] = {}
    for name, value in counters:
        cat = CATEGORY.get(name.lower())
        if cat is not None:
            out[cat] = out.get(cat, 0) + value
    return out


def _run(host: Host, argv: tuple[str, ...], timeout: float) -> tuple[bool, str]:
    """``(True, stdout)`` or ``(False, why there is none)``.  A non-zero exit whose output
    is NVML's "no NVLink" verdict is output, not a failure."""
    cmd = " ".join(argv)
    try:
        res = host.run(list(argv), timeout=timeout)
    except (CommandError, LiveStateUnavailable) as exc:
        return False, f"{cmd} failed: {exc}"
    if res.returncode != 0:
        text = res.stdout.strip() or res.stderr.strip()
        if text and _verdict(text[:4096]) is not None and text.startswith("GPU "):
            return True, res.stdout
        first = text.splitlines()[:1]
        return False, (f"{cmd} exited {res.returncode}: "
                       f"{first[0][:200] if first else 'no output'}")
    return True, res.stdout


def status(host: Host, timeout: float) -> tuple[GpuLinks, ...] | str:
    """This scan's ``nvidia-smi nvlink --status``, parsed (run at most once per scan, only
    on the real ``/`` live), or why there is none."""

    def load() -> tuple[GpuLinks, ...] | str:
        ok, out = _run(host, STATUS_ARGV, timeout)
        if not ok:
            return out
        try:
            return parse_status(out)
        except ParseError as exc:
            return f"unexpected nvidia-smi nvlink --status output: {exc}"

    return host.memo(("nvidia-smi-nvlink-status",), load)


def errors(host: Host, timeout: float) -> tuple[GpuCounters, ...] | str:
    """This scan's ``nvidia-smi nvlink --errorcounters``, parsed (run at most once per
    scan, only on the real ``/`` live), or why there is none."""

    def load() -> tuple[GpuCounters, ...] | str:
        ok, out = _run(host, ERRORS_ARGV, timeout)
        if not ok:
            return out
        try:
            return parse_errors(out)
        except ParseError as exc:
            return f"unexpected nvidia-smi nvlink --errorcounters output: {exc}"

    return host.memo(("nvidia-smi-nvlink-errors",), load)
