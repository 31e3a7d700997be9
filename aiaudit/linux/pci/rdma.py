"""RDMA devices of a live host and the RoCE path MTU.

Sources: Documentation/ABI/stable/sysfs-class-infiniband (``/sys/class/infiniband/<dev>``,
``ports/<n>/link_layer``, ``device/net/<netdev>``); include/rdma/ib_addr.h
``iboe_get_mtu`` (the IB path MTU is the largest of 256..4096 that fits in the netdev MTU
minus 96 bytes of GRH, UDP, BTH, extended and ICRC headers): a netdev MTU of at least 4192
gives the 4096-byte IB MTU.
"""

from __future__ import annotations

from aiaudit.core.host import Host

IB = "/sys/class/infiniband"
"""One directory per RDMA device (InfiniBand HCA or RoCE adapter)."""
ROCE_OVERHEAD = 96
"""Bytes ``iboe_get_mtu`` subtracts from the netdev MTU (GRH 40, UDP 8, BTH 12, XRC 4,
AtomicETH 28, ICRC 4)."""
IB_MTUS = (4096, 2048, 1024, 512, 256)
"""The IB MTUs (``enum ib_mtu``), largest first."""


def rdma_devices(host: Host) -> list[str]:
    """RDMA devices (``/sys/class/infiniband/<dev>``), live only."""
    return sorted(host.listdir(IB)) if host.live else []


def roce_netdevs(host: Host) -> list[tuple[str, str]]:
    """``(netdev, rdma device)`` for RoCE devices (a port whose link layer is Ethernet),
    live only."""
    out = []
    for dev in rdma_devices(host):
        ports = host.listdir(f"{IB}/{dev}/ports")
        if not any((host.try_read_text(f"{IB}/{dev}/ports/{pt}/link_layer") or "").strip()
                   == "Ethernet" for pt in ports):
            continue
        for nd in host.listdir(f"{IB}/{dev}/device/net"):
            out.append((nd, dev))
    return out


def iboe_mtu(netdev_mtu: int) -> int | None:
    """The IB MTU RoCE uses over a netdev of MTU ``netdev_mtu`` (``iboe_get_mtu``), or
    ``None`` when not even 256 bytes fit."""
    return next((m for m in IB_MTUS if netdev_mtu - ROCE_OVERHEAD >= m), None)
