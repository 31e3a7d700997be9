"""``aiaudit.linux.infiniband.ports``: the kernel's port attributes, on node_exporter's real
sysfs capture and on the formats of ``drivers/infiniband/core/sysfs.c``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.linux.infiniband import ports as ib
from tests.linux.infiniband.ttar import ttar_files


def test_real_node_exporter_tree(make_root) -> None:
    files, links = ttar_files("node_exporter-sys-infiniband.ttar")
    host = Host(str(make_root(files, links)), live=True)
    got = {p.subject: p for p in ib.ports(host)}
    assert list(got) == ["i40iw0/1", "mlx4_0/1", "mlx4_0/2"]
    iw = got["i40iw0/1"]
    assert iw.state == (4, "ACTIVE") and iw.phys_state == (5, "LinkUp")
    assert iw.rate == ib.Rate(10.0, 4, None) and iw.link_layer == "InfiniBand"
    assert dict(iw.counters) == {"symbol_error": None, "link_downed": None,
                                 "link_error_recovery": None}
    assert got["mlx4_0/1"].rate == ib.Rate(40.0, 4, "QDR")
    assert dict(got["mlx4_0/1"].counters)["link_downed"] == 0
    assert "symbol_error" not in dict(got["mlx4_0/2"].counters)
    assert ib.ports(Host(str(make_root(files, links)), live=False)) == []


@pytest.mark.parametrize(("text", "want"), [
    ("400 Gb/sec (4X NDR)\n", ib.Rate(400.0, 4, "NDR")),
    ("200 Gb/sec (2X NDR)", ib.Rate(200.0, 2, "NDR")),
    ("2.5 Gb/sec (1X SDR)", ib.Rate(2.5, 1, "SDR")),
    ("56 Gb/sec (4X FDR)", ib.Rate(56.0, 4, "FDR")),
    ("40 Gb/sec (4X FDR10)", ib.Rate(40.0, 4, "FDR10")),
    ("800 Gb/sec (4X XDR)", ib.Rate(800.0, 4, "XDR")),
    ("10 Gb/sec (4X)", ib.Rate(10.0, 4, None)),
    ("100 Gb/sec", ib.Rate(100.0, None, None)),
])
def test_rate(text, want) -> None:
    assert ib.parse_rate(text) == want


@pytest.mark.parametrize("bad", ["", "fast", "400 Gb/s", "400 Gb/sec (NDR)"])
def test_bad_rate(bad) -> None:
    with pytest.raises(ParseError):
        ib.parse_rate(bad)


def test_state_and_counter() -> None:
    assert ib.parse_state("4: ACTIVE\n") == (4, "ACTIVE")
    assert ib.parse_state("4: PortConfigurationTraining") == (4, "PortConfigurationTraining")
    assert ib.parse_counter("N/A (no PMA)\n") is None
    assert ib.parse_counter("65535\n") == 65535
    with pytest.raises(ParseError):
        ib.parse_counter("-1")


def test_unreadable_port_is_an_error_not_a_crash(make_root) -> None:
    base = "/sys/class/infiniband/mlx5_0/ports/1"
    host = Host(str(make_root({f"{base}/state": "4: ACTIVE\n", f"{base}/rate": "garbage\n",
                               f"{base}/phys_state": "5: LinkUp\n"})), live=True)
    [p] = ib.ports(host)
    assert p.error and "rate" in p.error


@given(st.text(max_size=80))
def test_parsers_total(text: str) -> None:
    for parse in (ib.parse_rate, ib.parse_state, ib.parse_counter):
        try:
            parse(text)
        except ParseError:
            pass
