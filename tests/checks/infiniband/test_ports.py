"""``infiniband.ports``: ACTIVE, LinkUp, full rate and width."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.infiniband.trees import ib_port
from tests.helpers import run_check
from tests.linux.infiniband.ttar import ttar_files


def _run(root, params=None, live=True):
    return {r.subject: r for r in run_check("infiniband.ports", root, params, live=live)}


def test_real_capture_passes(make_root) -> None:
    files, links = ttar_files("node_exporter-sys-infiniband.ttar")
    got = _run(make_root(files, links))
    assert {k: r.status for k, r in got.items()} == {
        "i40iw0/1": Status.FAIL, "mlx4_0/1": Status.PASS, "mlx4_0/2": Status.PASS}
    # the 10 Gb/s iWARP port is slower than the node's fastest InfiniBand port (40 Gb/s)
    assert "below 40 Gb/s" in got["i40iw0/1"].message
    got = _run(make_root(files, links), {"ports": ["mlx4_*"]})
    assert set(got) == {"mlx4_0/1", "mlx4_0/2"}


def test_states_rates_widths(make_root) -> None:  # hand-made tree
    files: dict = {}
    ib_port(files, "mlx5_0", 1)
    ib_port(files, "mlx5_1", 1, rate="200 Gb/sec (4X HDR)")
    ib_port(files, "mlx5_2", 1, rate="200 Gb/sec (2X NDR)")
    ib_port(files, "mlx5_3", 1, state="1: DOWN", phys="2: Polling", rate="10 Gb/sec (4X SDR)")
    ib_port(files, "mlx5_4", 1, state="2: INIT")
    ib_port(files, "mlx5_5", 1, phys="6: LinkErrorRecovery")
    ib_port(files, "mlx5_6", 1, layer="Ethernet", rate="100 Gb/sec (4X EDR)")
    got = _run(make_root(files))
    st = {k: r.status for k, r in got.items()}
    assert st == {"mlx5_0/1": Status.PASS, "mlx5_1/1": Status.FAIL, "mlx5_2/1": Status.FAIL,
                  "mlx5_3/1": Status.FAIL, "mlx5_4/1": Status.FAIL, "mlx5_5/1": Status.FAIL,
                  "mlx5_6/1": Status.PASS}
    assert "fewer lanes than 4X" in got["mlx5_2/1"].message
    assert "Polling" in got["mlx5_3/1"].message
    assert "subnet manager" in got["mlx5_4/1"].message
    assert all(r.remediation for r in got.values() if r.status is Status.FAIL)
    assert got["mlx5_0/1"].evidence[0].source.endswith("mlx5_0/ports/1/state")
    got = _run(make_root(files), {"min_rate_gbps": 200, "width": 2,
                                  "link_layers": ["InfiniBand"]})
    assert got["mlx5_1/1"].status is Status.PASS and got["mlx5_2/1"].status is Status.PASS
    assert "mlx5_6/1" not in got


def test_offline_and_absent(make_root) -> None:
    files = ib_port({}, "mlx5_0", 1)
    [r] = run_check("infiniband.ports", make_root(files), live=False)
    assert r.status is Status.SKIP and "offline" in r.message
    [r] = run_check("infiniband.ports", make_root({"/etc/hostname": "x\n"}), live=True)
    assert r.status is Status.SKIP


def test_unreadable_port(make_root) -> None:
    files = ib_port({}, "mlx5_0", 1, rate="??")
    [r] = run_check("infiniband.ports", make_root(files), live=True)
    assert r.status is Status.ERROR and "mlx5_0/1" == r.subject
