"""RDMA ports in sysfs: state, physical state, rate and width, link layer, error counters.

Source: the kernel's RDMA core, ``drivers/infiniband/core/sysfs.c`` and
Documentation/ABI/stable/sysfs-class-infiniband.  Per port,
``/sys/class/infiniband/<dev>/ports/<n>/``:

- ``state``: ``"<n>: <NAME>"``, ``enum ib_port_state`` (1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE,
  5 ACTIVE_DEFER); only ACTIVE carries traffic (INIT waits for the subnet manager);
- ``phys_state``: ``"<n>: <Name>"`` (1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining,
  5 LinkUp, 6 LinkErrorRecovery, 7 Phy Test);
- ``rate``: ``rate_show`` prints ``"%d%s Gb/sec (%dX%s)"``: the total rate (``.5`` for half
  gigabits), then the active width (1X, 2X, 4X, 8X, 12X) and speed name (`` SDR``, `` DDR``,
  `` QDR``, `` FDR10``, `` FDR``, `` EDR``, `` HDR``, `` NDR``, `` XDR``; old kernels print
  nothing for SDR, as ``10 Gb/sec (4X)`` in node_exporter's fixture shows);
- ``link_layer``: ``InfiniBand`` or ``Ethernet`` (RoCE);
- ``counters/<name>``: the PortCounters of the port's PMA as decimal numbers, or
  ``N/A (no PMA)`` on devices without one (iWARP, some RoCE drivers).  The error counters of
  the InfiniBand Architecture Specification (vol. 1, 16.1.3.5, PortCounters) saturate at
  their width: SymbolErrorCounter 16 bits (65535), LinkErrorRecoveryCounter and
  LinkDownedCounter 8 bits (255).

Live state only: read when the host is live; an offline root has no ports.
"""

from __future__ import annotations

from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.startup import lazy_pattern
from aiaudit.core.startup.records import record

IB = "/sys/class/infiniband"
"""One directory per RDMA device (InfiniBand HCA or RoCE adapter)."""

ERROR_COUNTERS = {"symbol_error": 0xFFFF, "link_downed": 0xFF, "link_error_recovery": 0xFF}
"""The link error counters read, with the value at which each saturates (IBA PortCounters:
16-bit SymbolErrorCounter, 8-bit LinkDownedCounter and LinkErrorRecoveryCounter)."""

_RATE = lazy_pattern(r"(\d{1,5}(?:\.5)?) Gb/sec(?: \((\d{1,2})X(?: ([A-Z0-9]{3,6}))?\))?")
_STATE = lazy_pattern(r"(\d{1,2}): ([A-Za-z_ ]{1,40})")
_MAX_PORTS = 64
_MAX_DEVICES = 256


@record
class Rate:
    """A port's ``rate`` file."""

    gbps: float
    width: int | None
    """Lanes: 1, 2, 4, 8 or 12 (``None`` where the kernel printed no width)."""
    speed: str | None
    """Per-lane speed name: ``SDR`` ... ``XDR`` (``None`` where the kernel printed none)."""


@record
class Port:
    """One RDMA port (``error`` set where its attributes could not be read)."""

    dev: str
    num: str
    link_layer: str | None = None
    state: tuple[int, str] | None = None
    phys_state: tuple[int, str] | None = None
    """``None`` where the file is absent (every kernel since 2.6.x has it; a partial
    snapshot may not)."""
    rate: Rate | None = None
    counters: tuple[tuple[str, int | None], ...] = ()
    """``(name, value)`` for each of :data:`ERROR_COUNTERS` the port has (``None``:
    ``N/A (no PMA)``)."""
    error: str | None = None

    @property
    def subject(self) -> str:
        """``<dev>/<port>``, as ``ibstat`` names a port."""
        return f"{self.dev}/{self.num}"

    @property
    def base(self) -> str:
        """The port's sysfs directory."""
        return f"{IB}/{self.dev}/ports/{self.num}"


def parse_state(text: str) -> tuple[int, str]:
    """``"4: ACTIVE"`` -> ``(4, "ACTIVE")``; ``"5: LinkUp"`` -> ``(5, "LinkUp")``."""
    t = text.strip()
    m = _STATE().fullmatch(t)
    if not m:
        raise ParseError(f"not a port state: {t[:40]!r}")
    return int(m.group(1)), m.group(2).strip()


def parse_rate(text: str) -> Rate:
    """``"400 Gb/sec (4X NDR)"`` -> 400 Gb/s, 4 lanes, NDR; ``"10 Gb/sec (4X)"`` (old SDR);
    ``"2.5 Gb/sec (1X SDR)"``."""
    t = text.strip()
    m = _RATE().fullmatch(t)
    if not m:
        raise ParseError(f"not a port rate: {t[:40]!r}")
    return Rate(float(m.group(1)), int(m.group(2)) if m.group(2) else None, m.group(3))


def parse_counter(text: str) -> int | None:
    """A counter file: its decimal value, or ``None`` for ``N/A (no PMA)``."""
    t = text.strip()
    if t.startswith("N/A"):
        return None
    if not (t.isascii() and t.isdigit()) or len(t) > 20:
        raise ParseError(f"not a counter value: {t[:40]!r}")
    return int(t)


def devices(host: Host) -> list[str]:
    """RDMA devices (``/sys/class/infiniband/<dev>``), live only, at most 256."""
    return sorted(host.listdir(IB))[:_MAX_DEVICES] if host.live else []


ATTRIBUTES = ("state", "phys_state", "rate", "link_layer",
              *(f"counters/{name}" for name in ERROR_COUNTERS))
"""The files of a port directory read, in one batch (:meth:`Host.read_many`)."""


def _text(got: bytes | HostError, required: bool) -> str | None:
    """A file's text as :meth:`Host.read_many` gave it: an absent file is ``None`` unless
    ``required``; any other error is raised, as a read would."""
    if isinstance(got, NotFound) and not required:
        return None
    if isinstance(got, HostError):
        raise got
    return got.decode("utf-8", errors="replace")


def read_port(host: Host, dev: str, num: str) -> Port:
    """One port's attributes (a file that cannot be read or parsed: ``error``)."""
    base = f"{IB}/{dev}/ports/{num}"
    got = dict(zip(ATTRIBUTES, host.read_many([f"{base}/{a}" for a in ATTRIBUTES]),
                   strict=True))
    try:
        phys = _text(got["phys_state"], False)
        layer = _text(got["link_layer"], False)
        state = parse_state(_text(got["state"], True) or "")
        phys_state = parse_state(phys) if phys is not None else None
        rate = parse_rate(_text(got["rate"], True) or "")
        counters = []
        for name in ERROR_COUNTERS:
            text = _text(got[f"counters/{name}"], False)
            if text is not None:
                counters.append((name, parse_counter(text)))
        return Port(dev, num, link_layer=(layer or "").strip() or None, state=state,
                    phys_state=phys_state, rate=rate, counters=tuple(counters))
    except (HostError, ParseError) as exc:
        return Port(dev, num, error=str(exc))


def ports(host: Host) -> list[Port]:
    """Every port of every RDMA device, device by device in port order (read once per
    run and shared by the ``infiniband.*`` rules); empty offline."""

    def load() -> list[Port]:
        out = []
        for dev in devices(host):
            nums = [n for n in host.listdir(f"{IB}/{dev}/ports") if n.isascii() and n.isdigit()]
            for num in sorted(nums, key=int)[:_MAX_PORTS]:
                out.append(read_port(host, dev, num))
        return out

    return host.memo(("infiniband-ports",), load)
