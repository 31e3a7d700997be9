"""The sysctl.d parsers (systemd and procps flavours), key normalisation and file order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.linux.sysctl import conf as sp

F = "/etc/sysctl.d/10-x.conf"


@given(st.text())
def test_parse_any_text_gives_entries_or_parse_error(text: str) -> None:
    try:
        entries, warnings = sp.parse(text, F)
    except ParseError:
        assert "\x00" in text
        return
    for e in entries:
        assert e.key and not e.key.startswith("/") and "//" not in e.key
        assert e.value is None or e.value == e.value.strip(" \t\n\r")
        assert e.file == F and e.line >= 1
    assert all(w.line >= 1 for w in warnings)


@given(st.text())
def test_parse_procps_any_text_gives_entries_or_parse_error(text: str) -> None:
    try:
        entries = sp.parse_procps(text, F)
    except ParseError:
        assert "\x00" in text
        return
    for e in entries:
        assert e.key and e.line >= 1
        # decide never raises on whatever the parser produced
        sp.procps_decide(entries, "vm/swappiness")


@given(st.text(alphabet="ab.*?[]/-=#; \t\n\r", max_size=60))
def test_decide_any_entries(text: str) -> None:
    entries, _ = sp.parse(text, F)
    for key in ("a/b", "a/b.b", "b"):
        d = sp.systemd_decide(entries, key)
        assert d.value is None or d.entry is not None


_COMPONENT = st.text(alphabet="abcxyz_019-", min_size=1, max_size=6)


@given(st.lists(_COMPONENT, min_size=1, max_size=5), st.lists(_COMPONENT, max_size=3))
def test_normalize_key_round_trip(parts: list[str], iface: list[str]) -> None:
    # an interface name with dots (eth0.100) is one component of the slash form
    comps = [*parts[:1], ".".join(iface) or "x", *parts[1:]] if iface else parts
    slash = "/".join(comps)
    assert sp.normalize_key(sp.dotted(slash)) == slash
    assert sp.normalize_key(slash) == slash
    assert sp.normalize_key("/" + slash + "/") == slash
    assert sp.dotted(sp.dotted(slash)) == slash


@pytest.mark.parametrize("raw,key", [
    ("net.ipv4.conf.eth0/100.rp_filter", "net/ipv4/conf/eth0.100/rp_filter"),
    ("net/ipv4/conf/eth0.100/rp_filter", "net/ipv4/conf/eth0.100/rp_filter"),
    ("/net/ipv4/ip_forward", "net/ipv4/ip_forward"),
    ("vm..swappiness", "vm/swappiness"),  # path_simplify
    ("vm/./swappiness", "vm/swappiness"),
    ("kernel", "kernel"),
])
def test_normalize_key(raw: str, key: str) -> None:
    assert sp.normalize_key(raw) == key


def test_parse_line_forms() -> None:
    text = ("# comment\n; comment\n\n  vm.swappiness =  10 \n-vm.dirty_ratio = 5\n"
            "-net.ipv4.conf.all.rp_filter\nnot an assignment\n"
            "net.ipv4.ip_local_port_range = 32768  60999\nkernel.x =\n"
            "net.ipv4.conf.*.rp_filter = 2\n")
    entries, warnings = sp.parse(text, F)
    got = [(e.key, e.value, e.ignore_failure, e.line, e.is_glob) for e in entries]
    assert got == [
        ("vm/swappiness", "10", False, 4, False),
        ("vm/dirty_ratio", "5", True, 5, False),
        ("net/ipv4/conf/all/rp_filter", None, False, 6, False),
        ("net/ipv4/ip_local_port_range", "32768  60999", False, 8, False),
        ("kernel/x", "", False, 9, False),
        ("net/ipv4/conf/*/rp_filter", "2", False, 10, True),
    ]
    assert [(w.line, "not an assignment" in w.message) for w in warnings] == [(7, True)]


def test_parse_line_endings_and_whitespace() -> None:
    entries, _ = sp.parse("a.b = 1\r\nc.d = 2\re.f\v= 3\n", F)
    # \r ends a line for systemd; \v is not systemd whitespace: part of the key
    assert [(e.key, e.value, e.line) for e in entries] == [
        ("a/b", "1", 1), ("c/d", "2", 2), ("e/f\v", "3", 3)]


def test_parse_binary_is_parse_error() -> None:
    with pytest.raises(ParseError, match=r"10-x\.conf"):
        sp.parse("a = 1\n\x00", F)


def test_parse_procps_quirks() -> None:
    text = "/vm/swappiness = 1\n- vm.dirty_ratio = 2\nx\n-net.ipv4.conf.*.rp_filter \nk\v= 3\n"
    got = [(e.key, e.value, e.ignore_failure) for e in sp.parse_procps(text, F)]
    assert got == [
        ("/vm/swappiness", "1", False),       # leading slash kept
        (" vm/dirty_ratio", "2", True),       # the space after '-' is kept
        ("net/ipv4/conf/*/rp_filter", None, False),
        ("k", "3", False),                    # C isspace strips \v
    ]


def test_order_files() -> None:
    listing = [
        ("/etc/sysctl.d", ["50-b.conf", ".hidden.conf", "README", "a.conf"]),
        ("/run/sysctl.d", ["50-b.conf", "10-a.conf"]),
        ("/usr/lib/sysctl.d", ["B.conf", "10-a.conf", "99-z.conf.bak"]),
    ]
    got = [(f.name, f.path) for f in sp.order_files(listing)]
    assert got == [("10-a.conf", "/run/sysctl.d/10-a.conf"),
                   ("50-b.conf", "/etc/sysctl.d/50-b.conf"),
                   ("B.conf", "/usr/lib/sysctl.d/B.conf"),  # strcmp: 'B' < 'a'
                   ("a.conf", "/etc/sysctl.d/a.conf")]
    hidden = [f.name for f in sp.order_files(listing, hidden=True)]
    assert hidden[0] == ".hidden.conf"


@pytest.mark.parametrize("pattern,key,match", [
    ("net/ipv4/conf/*/rp_filter", "net/ipv4/conf/eth0.100/rp_filter", True),
    ("net/*/rp_filter", "net/ipv4/conf/all/rp_filter", False),
    ("net/ipv4/conf/[^a]*/rp_filter", "net/ipv4/conf/all/rp_filter", False),
    ("net/ipv4/conf/[^a]*/rp_filter", "net/ipv4/conf/eth0/rp_filter", True),
    ("net/ipv4/conf/*/rp_filter", "net/ipv4/conf/.x/rp_filter", False),
    ("vm/dirty_?atio", "vm/dirty_ratio", True),
])
def test_glob_matches(pattern: str, key: str, match: bool) -> None:
    assert sp.glob_matches(pattern, key) is match


def test_normalize_value() -> None:
    assert sp.normalize_value("4096\t131072\t6291456\n") == "4096 131072 6291456"
