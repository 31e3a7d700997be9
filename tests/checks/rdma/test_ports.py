"""``rdma.ports``: RDMA ports ACTIVE at the expected rate."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.readiness_trees import port
from tests.helpers import run_check


def test_ports(make_root) -> None:
    files: dict = {}
    port(files, "mlx5_0", 1, "4: ACTIVE", "400 Gb/sec (4X NDR)")
    port(files, "mlx5_1", 1, "4: ACTIVE", "200 Gb/sec (4X HDR)")
    port(files, "mlx5_2", 1, "1: DOWN", "10 Gb/sec (4X SDR)")
    got = {r.subject: r.status for r in run_check("rdma.ports", make_root(files), live=True)}
    assert got == {"mlx5_0/1": Status.PASS, "mlx5_1/1": Status.FAIL, "mlx5_2/1": Status.FAIL}
    got = {r.subject: r.status for r in run_check("rdma.ports", make_root(files),
                                                  {"min_rate_gbps": 200}, live=True)}
    assert got["mlx5_1/1"] is Status.PASS
