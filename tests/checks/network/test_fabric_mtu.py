"""``network.fabric_mtu``: RoCE and listed fabric interfaces have a large MTU."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.readiness_trees import port
from tests.helpers import run_check


def test_roce_mtu(make_root) -> None:
    files: dict = {"/sys/class/net/ens1f0np0/mtu": "1500\n", "/sys/class/net/eth9/mtu": "9000\n"}
    port(files, "mlx5_0", 1, "4: ACTIVE", "100 Gb/sec (4X EDR)", "Ethernet")
    files["/sys/devices/pci0000:00/0000:00:01.0/net/ens1f0np0/mtu"] = "1500\n"
    links = {"/sys/class/infiniband/mlx5_0/device": "../../../devices/pci0000:00/0000:00:01.0"}
    got = {r.subject: r for r in run_check("network.fabric_mtu", make_root(files, links),
                                           {"interfaces": ["eth*"]}, live=True)}
    assert got["ens1f0np0"].status is Status.FAIL and "1024-byte IB MTU" in \
        got["ens1f0np0"].message
    assert got["eth9"].status is Status.PASS
