"""/proc/net socket tables: byte order, IPv6, mapped IPv4, UDP states; the real kernel as
oracle for sockets the test opens."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.network import procnet

HEADER = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
          "timeout inode\n")


def row(local: str, port: int, state: int, inode: int, remote: str = "0.0.0.0",
        rport: int = 0, uid: int = 0, le: bool = True) -> str:
    """A /proc/net row as the kernel prints it."""
    la = procnet.encode_address(local, little_endian=le)
    ra = procnet.encode_address(remote, little_endian=le)
    return (f"   0: {la}:{port:04X} {ra}:{rport:04X} {state:02X} 00000000:00000000 "
            f"00:00000000 00000000 {uid:5d}        0 {inode} 1 0000000000000000 100 0 0 10 0\n")


def test_ipv4_little_endian() -> None:
    text = HEADER + ("   0: 0100007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 "
                     "00000000     0        0 12345 1 0000000000000000 100 0 0 10 0\n")
    (s,) = procnet.parse(text, "tcp", 4, little_endian=True)
    assert str(s.local) == "127.0.0.1" and s.port == 22 and s.inode == 12345
    assert s.listening and s.loopback and not s.wildcard


def test_ipv4_big_endian() -> None:
    text = HEADER + row("10.1.2.3", 8888, 0x0A, 7, le=False)
    (s,) = procnet.parse(text, "tcp", 4, little_endian=False)
    assert str(s.local) == "10.1.2.3" and s.port == 8888


def test_ipv6_word_order() -> None:
    # ::1 on little-endian: the last word 00000001 prints as 01000000
    text = HEADER.replace("local_address", "local_address                        ") + (
        "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 "
        "0A 00000000:00000000 00:00000000 00000000  1000        0 99 1 0 100 0 0 10 0\n")
    (s,) = procnet.parse(text, "tcp", 6, little_endian=True)
    assert str(s.local) == "::1" and s.port == 8080 and s.uid == 1000 and s.loopback
    text2 = HEADER + row("fe80::1:2:3:4", 443, 0x0A, 5)
    (s2,) = procnet.parse(text2, "tcp", 6, little_endian=True)
    assert s2.local == ipaddress.IPv6Address("fe80::1:2:3:4")


def test_ipv4_mapped_is_ipv4() -> None:
    (s,) = procnet.parse(HEADER + row("::ffff:127.0.0.1", 5000, 0x0A, 1), "tcp", 6)
    assert s.local == ipaddress.IPv4Address("127.0.0.1") and s.loopback
    (s,) = procnet.parse(HEADER + row("::ffff:10.0.0.5", 5000, 0x0A, 1), "tcp", 6)
    assert str(s.local) == "10.0.0.5" and not s.loopback


def test_udp_states() -> None:
    text = HEADER + row("0.0.0.0", 53, 0x07, 1) + \
        row("0.0.0.0", 5353, 0x01, 2, remote="10.0.0.9", rport=5353) + \
        row("0.0.0.0", 123, 0x07, 3, remote="10.0.0.9", rport=123)
    bound, connected, odd = procnet.parse(text, "udp", 4)
    assert bound.listening and bound.wildcard
    assert not connected.listening          # 01: connected to a peer
    assert not odd.listening                # 07 but with a remote end


def test_tcp_states_other_than_listen() -> None:
    text = HEADER + row("10.0.0.1", 22, 0x01, 0, remote="10.0.0.2", rport=50000) + \
        row("10.0.0.1", 22, 0x06, 0)
    assert not any(s.listening for s in procnet.parse(text, "tcp", 4))


@pytest.mark.parametrize("bad", [
    "   0: 0100007F:0016 00000000:0000 0A\n",
    "   0: 0100007Z:0016 00000000:0000 0A 0:0 0:0 0 0 0 1\n",
    "   0: 0100007F:16 00000000:0000 0A 0:0 0:0 0 0 0 1\n",
    "   0: 0100007F:0016 00000000:0000 XX 0:0 0:0 0 0 0 1\n",
    "   0: 0100007F:0016 00000000:0000 0A 0:0 0:0 0 0 0 notanumber\n",
])
def test_malformed_rows(bad: str) -> None:
    with pytest.raises(ParseError):
        procnet.parse(HEADER + bad, "tcp", 4)


def test_ipv6_address_in_ipv4_table_rejected() -> None:
    with pytest.raises(ParseError):
        procnet.parse(HEADER + row("::1", 22, 0x0A, 1), "tcp", 4)


@given(st.text())
def test_any_text_parses_or_raises_parse_error(text: str) -> None:
    for proto in ("tcp", "udp"):
        for fam in (4, 6):
            try:
                procnet.parse(text, proto, fam)
            except ParseError:
                pass


@given(st.ip_addresses(), st.booleans())
def test_encode_decode_roundtrip(addr, le: bool) -> None:
    back = procnet.decode_address(procnet.encode_address(str(addr), little_endian=le),
                                  little_endian=le)
    want = addr.ipv4_mapped if addr.version == 6 and addr.ipv4_mapped else addr
    assert back == want


# ------------------------------------------------------------------ the kernel as oracle
def _mine(path: str, proto: str, fam: int, sock: socket.socket) -> procnet.Socket:
    ino = os.fstat(sock.fileno()).st_ino  # == the N of socket:[N]
    got = [s for s in procnet.parse(Path(path).read_text(), proto, fam) if s.inode == ino]
    assert len(got) == 1, f"socket inode {ino} not in {path}"
    return got[0]


@pytest.mark.oracle
def test_real_kernel_tcp4_listen() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        got = _mine("/proc/net/tcp", "tcp", 4, s)
        assert got.port == s.getsockname()[1] and str(got.local) == "127.0.0.1"
        assert got.listening and got.loopback


@pytest.mark.oracle
def test_real_kernel_udp4_bound_and_connected() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as a, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as b:
        a.bind(("0.0.0.0", 0))
        b.bind(("127.0.0.1", 0))
        b.connect(("127.0.0.1", a.getsockname()[1]))
        ga = _mine("/proc/net/udp", "udp", 4, a)
        gb = _mine("/proc/net/udp", "udp", 4, b)
        assert ga.listening and ga.wildcard and ga.state == procnet.TCP_CLOSE
        assert not gb.listening and gb.state == procnet.TCP_ESTABLISHED
        assert gb.remote_port == a.getsockname()[1]


@pytest.mark.oracle
def test_real_kernel_tcp6() -> None:
    if not Path("/proc/net/tcp6").exists() or not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
        try:
            s.bind(("::1", 0))
        except OSError:
            pytest.skip("::1 not configured")
        s.listen()
        got = _mine("/proc/net/tcp6", "tcp", 6, s)
        assert str(got.local) == "::1" and got.port == s.getsockname()[1] and got.loopback
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
        s.bind(("::ffff:127.0.0.1", 0))
        s.listen()
        got = _mine("/proc/net/tcp6", "tcp", 6, s)
        assert got.local == ipaddress.IPv4Address("127.0.0.1")
