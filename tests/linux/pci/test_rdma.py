"""RDMA devices and the RoCE path MTU (:mod:`aiaudit.linux.pci.rdma`)."""

from __future__ import annotations

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.pci import rdma


@pytest.mark.parametrize(("netdev_mtu", "ib_mtu"), [
    (9000, 4096), (4192, 4096), (4191, 2048), (1500, 1024), (1024, 512), (352, 256),
    (351, None), (68, None),
])
def test_iboe_mtu(netdev_mtu: int, ib_mtu: int | None) -> None:
    """include/rdma/ib_addr.h ``iboe_get_mtu``: 96 bytes of headers, then the largest IB MTU
    that fits."""
    assert rdma.iboe_mtu(netdev_mtu) == ib_mtu


def test_roce_netdevs_only_of_ethernet_ports(make_root) -> None:
    ib = "/sys/class/infiniband"
    files = {f"{ib}/mlx5_0/ports/1/link_layer": "Ethernet\n",
             f"{ib}/mlx5_1/ports/1/link_layer": "InfiniBand\n",
             "/sys/devices/pci0000:00/0000:00:01.0/net/ens1f0np0/mtu": "9000\n",
             "/sys/devices/pci0000:00/0000:00:02.0/net/ib0/mtu": "4092\n"}
    links = {f"{ib}/mlx5_0/device": "../../../devices/pci0000:00/0000:00:01.0",
             f"{ib}/mlx5_1/device": "../../../devices/pci0000:00/0000:00:02.0"}
    root = str(make_root(files, links))
    assert rdma.roce_netdevs(Host(root, live=True)) == [("ens1f0np0", "mlx5_0")]
    assert rdma.rdma_devices(Host(root, live=True)) == ["mlx5_0", "mlx5_1"]
    assert rdma.rdma_devices(Host(root)) == []  # live state only
