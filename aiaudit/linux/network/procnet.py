"""``/proc/net/{tcp,tcp6,udp,udp6}`` parser: sockets, addresses, states, inodes.

Format (kernel ``net/ipv4/tcp_ipv4.c`` ``get_tcp4_sock``, ``net/ipv4/udp.c``
``udp4_format_sock``, ``Documentation/networking/proc_net_tcp.rst``): a header line, then
one row per socket; split on whitespace the fields are ``sl:``, ``local ADDR:PORT``,
``remote ADDR:PORT``, ``st`` (hex state), ``tx:rx``, ``tr:when``, ``retrnsmt``, ``uid``,
``timeout``, ``inode``.  An IPv4 address is ``%08X`` of the network-order ``__be32`` read as
a host integer, so on a little-endian machine the four bytes print reversed
(``0100007F`` = 127.0.0.1); IPv6 is four such words, each reversed on its own.  Ports are
``%04X`` of the host-order value.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from aiaudit.core.errors import ParseError
from aiaudit.core.startup.records import record

if TYPE_CHECKING:  # the module costs 6 M instructions: imported where a socket is decoded
    import ipaddress
    from typing import TypeAlias

    IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address

TCP_LISTEN = 0x0A
"""``TCP_LISTEN`` (include/net/tcp_states.h)."""
TCP_ESTABLISHED = 0x01
"""``TCP_ESTABLISHED``; a connected UDP socket shows this state too."""
TCP_CLOSE = 0x07
"""``TCP_CLOSE``: an unconnected (bound) UDP socket."""


@record
class Socket:
    """One row of a /proc/net socket table."""

    proto: str
    """``tcp`` or ``udp``."""
    family: int
    """4 or 6: the table it came from (a ``::`` tcp6 socket also accepts IPv4)."""
    local: IPAddress
    """Local address; an IPv4-mapped IPv6 address (``::ffff:a.b.c.d``) is given as IPv4."""
    port: int
    remote: IPAddress
    remote_port: int
    state: int
    uid: int
    inode: int
    line: int
    """1-based line in the file."""

    @property
    def listening(self) -> bool:
        """A TCP socket in LISTEN, or a bound, unconnected UDP socket (state 07, remote
        zero).  A connected UDP socket (01) only talks to its peer: not listening."""
        if self.proto == "tcp":
            return self.state == TCP_LISTEN
        return self.state == TCP_CLOSE and self.remote_port == 0 and \
            int(self.remote) == 0

    @property
    def wildcard(self) -> bool:
        """Bound to every address (``0.0.0.0`` or ``::``)."""
        return int(self.local) == 0

    @property
    def loopback(self) -> bool:
        """Bound to a loopback address only (127.0.0.0/8, ::1)."""
        return self.local.is_loopback

    def endpoint(self) -> str:
        """``0.0.0.0:22`` / ``[::]:22`` display form of the local end."""
        if self.local.version == 6:
            return f"[{self.local}]:{self.port}"
        return f"{self.local}:{self.port}"


def decode_address(text: str, *, little_endian: bool | None = None) -> IPAddress:
    """Decode a hex address column (8 digits: IPv4, 32: IPv6).  ``little_endian``
    defaults to this machine's byte order (the file is written by the local kernel)."""
    if little_endian is None:
        little_endian = sys.byteorder == "little"
    if len(text) not in (8, 32) or any(c not in "0123456789abcdefABCDEF" for c in text):
        raise ParseError(f"bad address {text!r}")
    import ipaddress

    raw = bytes.fromhex(text)
    if little_endian:
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    if len(raw) == 4:
        return ipaddress.IPv4Address(raw)
    addr = ipaddress.IPv6Address(raw)
    return addr.ipv4_mapped or addr


def _endpoint(text: str, little_endian: bool | None, line: int) -> tuple[IPAddress, int]:
    addr, sep, port = text.rpartition(":")
    if not sep or len(port) != 4:
        raise ParseError(f"bad endpoint {text!r}", line=line)
    try:
        return decode_address(addr, little_endian=little_endian), int(port, 16)
    except ValueError:
        raise ParseError(f"bad port in {text!r}", line=line) from None
    except ParseError as exc:
        raise ParseError(str(exc), line=line) from None


def parse(text: str, proto: str, family: int, *,
          little_endian: bool | None = None) -> list[Socket]:
    """Sockets of one table (``proto`` ``tcp``/``udp``, ``family`` 4/6).

    Raises :class:`ParseError` on a row that does not have the kernel's shape.
    """
    if proto not in ("tcp", "udp") or family not in (4, 6):
        raise ParseError(f"unknown table {proto}{family}")
    out: list[Socket] = []
    width = 8 if family == 4 else 32
    for n, raw in enumerate(text.splitlines(), 1):
        fields = raw.split()
        if not fields or fields[0] == "sl":
            continue
        if len(fields) < 10 or not fields[0].endswith(":"):
            raise ParseError(f"short or malformed row {raw.strip()!r}", line=n)
        local, lport = _endpoint(fields[1], little_endian, n)
        remote, rport = _endpoint(fields[2], little_endian, n)
        if len(fields[1].rpartition(":")[0]) != width:
            raise ParseError(f"{fields[1]!r} is not an IPv{family} address", line=n)
        try:
            state = int(fields[3], 16)
            uid = int(fields[7])
            inode = int(fields[9])
        except ValueError:
            raise ParseError(f"bad state, uid or inode in {raw.strip()!r}", line=n) from None
        out.append(Socket(proto, family, local, lport, remote, rport, state, uid, inode, n))
    return out


def encode_address(addr: str, *, little_endian: bool = True) -> str:
    """Inverse of :func:`decode_address` (for building fixtures and tests)."""
    import ipaddress

    ip = ipaddress.ip_address(addr)
    raw = ip.packed
    if little_endian:
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return raw.hex().upper()
