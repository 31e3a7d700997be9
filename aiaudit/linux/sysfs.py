"""Formats of small sysfs / procfs files: bracketed choices, CPU lists, sizes.

Sources: Documentation/ABI/stable/sysfs-block (``queue/scheduler``),
admin-guide/mm/transhuge.rst (``enabled``/``defrag``), lib/bitmap.c ``bitmap_parselist``
(CPU list syntax ``0-3,8-11``, ``0-31:2/4`` groups), lib/cmdline.c ``memparse`` and
mm/shmem.c ``shmem_parse_one`` (tmpfs ``size=`` with ``k m g t p e`` suffixes or ``%``).
"""

from __future__ import annotations

from typing import Iterable

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup.records import record


@record
class Choice:
    """A sysfs file listing options with the active one in brackets."""

    active: str | None
    """The bracketed option; ``None`` when nothing is bracketed (a bare ``none`` in
    ``queue/scheduler`` means the device cannot have an elevator)."""
    options: tuple[str, ...]


def parse_choice(text: str) -> Choice:
    """``"[none] mq-deadline kyber"`` or ``"mq-deadline [none]"`` -> :class:`Choice`.

    Position-independent: older kernels list ``none`` last.  More than one bracketed
    word, or an unclosed bracket, raises :class:`ParseError`.
    """
    active = None
    options = []
    for word in text.split():
        if word.startswith("[") and word.endswith("]") and len(word) > 2:
            if active is not None:
                raise ParseError(f"two active choices in {text.strip()!r}")
            active = word[1:-1]
            options.append(active)
        elif "[" in word or "]" in word:
            raise ParseError(f"malformed choice {word!r}")
        else:
            options.append(word)
    if not options:
        raise ParseError("empty choice file")
    return Choice(active, tuple(options))


def parse_cpulist(text: str) -> list[int]:
    """``"0-3,8,10-15:2/4"`` -> sorted CPU numbers (``bitmap_parselist`` syntax)."""
    out: set[int] = set()
    text = text.strip()
    if not text:
        return []
    for part in text.split(","):
        part = part.strip()
        try:
            group = None
            if ":" in part:
                part, g = part.split(":", 1)
                used, size = g.split("/", 1)
                group = (int(used), int(size))
            if "-" in part:
                a, b = part.split("-", 1)
                lo, hi = int(a), int(b)
            else:
                lo = hi = int(part)
        except ValueError:
            raise ParseError(f"bad CPU list element {part!r}") from None
        if lo < 0 or hi < lo or hi - lo > 1 << 20:
            raise ParseError(f"bad CPU range {part!r}")
        if group and (group[1] <= 0 or group[0] > group[1]):
            raise ParseError(f"bad CPU group {part!r}")
        for cpu in range(lo, hi + 1):
            if group is None or (cpu - lo) % group[1] < group[0]:
                out.add(cpu)
    return sorted(out)


def attr(value: bytes | Exception) -> str | None:
    """One attribute as :meth:`aiaudit.core.host.Host.read_many` gives it -> its stripped text
    (undecodable bytes replaced), or ``None`` for an error in its place (absent or
    unreadable: the same answer as :func:`read_opt` for one path)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace").strip()
    return None


def attr_is(value: bytes | Exception, text: str) -> bool:
    """``attr(value) == text``, without decoding the usual one ASCII word and newline
    (``b"0\\n"``: nothing to strip or replace in it)."""
    if isinstance(value, bytes) and value[-1:] == b"\n" and value[:-1].isalnum():
        return value[:-1] == text.encode()
    return attr(value) == text


def format_cpulist(cpus: Iterable[int]) -> str:
    """CPU numbers -> compact list ``"0-31,64-95"`` (the kernel's ``%*pbl`` format)."""
    nums = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(parts)


_SUFFIX = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}


@record
class Size:
    """A tmpfs-style size: absolute bytes or a percentage of RAM."""

    bytes: int | None = None
    percent: float | None = None

    def resolve(self, ram_bytes: int | None) -> int | None:
        """Bytes, using ``ram_bytes`` for a percentage (``None`` when unknown)."""
        if self.bytes is not None:
            return self.bytes
        if ram_bytes is None or self.percent is None:
            return None
        return int(ram_bytes * self.percent / 100)

    def __str__(self) -> str:
        if self.percent is not None:
            return f"{self.percent:g}%"
        assert self.bytes is not None
        return human_bytes(self.bytes)


def parse_size(text: str) -> Size:
    """``"16G"``, ``"24684084k"``, ``"50%"``, ``"1048576"`` -> :class:`Size` (memparse:
    binary suffixes, case-insensitive)."""
    t = text.strip()
    if t.endswith("%"):
        try:
            pct = float(t[:-1])
        except ValueError:
            raise ParseError(f"bad size {text!r}") from None
        if not 0 <= pct <= 100_000:
            raise ParseError(f"bad size {text!r}")
        return Size(percent=pct)
    mult = 0
    if t and t[-1].lower() in _SUFFIX:
        mult = _SUFFIX[t[-1].lower()]
        t = t[:-1]
    if not t.isascii() or not t.isdigit() or len(t) > 30:  # memparse reads 64 bits
        raise ParseError(f"bad size {text[:40]!r}")
    return Size(bytes=int(t) << (10 * mult))


def human_bytes(n: int) -> str:
    """``17179869184`` -> ``"16G"`` (largest exact binary unit, else one decimal)."""
    for unit, shift in (("T", 40), ("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{n}B"


def read_opt(host: Host, path: str) -> str | None:
    """Stripped content of ``path``, or ``None`` when it cannot be read (absent sysfs
    attribute, offline scan)."""
    try:
        return host.read_text(path).strip()
    except HostError:
        return None
