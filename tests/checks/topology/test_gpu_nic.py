"""``topology.gpu_nic`` on a hand-made sysfs tree (labelled: not a capture) shaped like an
HGX baseboard: two root complexes on two NUMA nodes, each GPU below a PCIe switch that
also holds its NIC, as ``nvidia-smi topo -m`` shows PIX between them on such boards."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.core.model import Status
from aiaudit.linux.topology import affinity
from tests.helpers import run_check


def _fn(files, links, path, vendor, klass, numa, width=None):
    """A PCI function at /sys/devices/<path> with its /sys/bus/pci/devices link."""
    bdf = path.rsplit("/", 1)[-1]
    base = f"/sys/devices/{path}"
    files[f"{base}/vendor"] = f"0x{vendor:04x}\n"
    files[f"{base}/class"] = f"0x{klass:06x}\n"
    files[f"{base}/numa_node"] = f"{numa}\n"
    if width:
        files[f"{base}/current_link_width"] = f"{width[0]}\n"
        files[f"{base}/max_link_width"] = f"{width[1]}\n"
    links[f"/sys/bus/pci/devices/{bdf}"] = f"../../../devices/{path}"
    return base


def hgx(narrow: bool = False):
    """Per NUMA node: root port -> top switch -> two switches, each with a GPU and a NIC
    (DGX A100-like: PIX to its own NIC, PXB to the other; SYS across NUMA nodes)."""
    files: dict = {}
    links: dict = {}
    bridge = 0x060400
    for dom, numa, bus in (("pci0000:00", 0, 0x01), ("pci0000:80", 1, 0x81)):
        rp = f"{dom}/0000:{bus - 1:02x}:01.0"
        _fn(files, links, rp, 0x8086, bridge, numa, (16, 16))
        top = f"{rp}/0000:{bus:02x}:00.0"
        _fn(files, links, top, 0x1000, bridge, numa, (16, 16))
        for k in range(2):
            b = bus + 1 + 4 * k
            tdsp = f"{top}/0000:{bus + 1:02x}:{k:02x}.0"
            _fn(files, links, tdsp, 0x1000, bridge, numa, (16, 16))
            sw = f"{tdsp}/0000:{b + 1:02x}:00.0"
            w = (8, 16) if narrow and numa == 0 and k == 0 else (16, 16)
            _fn(files, links, sw, 0x1000, bridge, numa, w)
            dsp_g, dsp_n = f"{sw}/0000:{b + 2:02x}:00.0", f"{sw}/0000:{b + 2:02x}:01.0"
            _fn(files, links, dsp_g, 0x1000, bridge, numa, (16, 16))
            _fn(files, links, dsp_n, 0x1000, bridge, numa, (16, 16))
            gpu = f"{dsp_g}/0000:{b + 3:02x}:00.0"
            nic = f"{dsp_n}/0000:{b + 4:02x}:00.0"
            _fn(files, links, gpu, 0x10DE, 0x030200, numa)
            _fn(files, links, nic, 0x15B3, 0x020700, numa)
            name = f"mlx5_{2 * numa + k}"
            links[f"/sys/class/infiniband/{name}"] = f"../../devices/{nic}/infiniband/{name}"
            files[f"/sys/devices/{nic}/infiniband/{name}/node_type"] = "1: CA\n"
            links[f"/sys/devices/{nic}/infiniband/{name}/device"] = "../.."
    return files, links


def test_levels(make_root) -> None:
    files, links = hgx()
    host = Host(str(make_root(files, links)), live=True)
    places = {g.bdf: g for g in affinity.gpu_places(host)}
    assert sorted(places) == ["0000:05:00.0", "0000:09:00.0", "0000:85:00.0",
                              "0000:89:00.0"]
    g = places["0000:05:00.0"]
    assert (g.numa, g.nearest, g.level) == (0, ("mlx5_0",), "PIX")
    assert dict(g.levels) == {"mlx5_0": "PIX", "mlx5_1": "PXB", "mlx5_2": "SYS",
                              "mlx5_3": "SYS"}
    assert places["0000:89:00.0"].nearest == ("mlx5_3",)


def test_level_names() -> None:
    a = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    b = "/sys/devices/pci0000:00/0000:00:02.0/0000:05:00.0"
    assert affinity.level(a, 0, b, 0) == "PHB"
    assert affinity.level(a, 0, "/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", 0) \
        == "NODE"
    assert affinity.level(a, 0, "/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", None) \
        == "SYS"


def test_pairs_and_max_level(make_root) -> None:
    files, links = hgx()
    root = make_root(files, links)
    got = {r.subject: r for r in run_check("topology.gpu_nic", root, live=True)}
    assert {r.status for r in got.values()} == {Status.PASS}
    assert "NUMA node 0, nearest NIC mlx5_0 (PIX)" in got["GPU 0000:05:00.0"].message
    pairs = {"0000:05:00.0": "mlx5_0", "0000:09:00.0": "mlx5_0", "0000:85:00.0": "mlx5_9",
             "0000:99:00.0": "mlx5_1"}
    got = {r.subject: r for r in run_check("topology.gpu_nic", root,
                                           {"pairs": pairs, "max_level": "PIX"}, live=True)}
    st = {k: r.status for k, r in got.items()}
    assert st == {"GPU 0000:05:00.0": Status.PASS, "GPU 0000:09:00.0": Status.FAIL,
                  "GPU 0000:85:00.0": Status.FAIL, "GPU 0000:89:00.0": Status.PASS,
                  "GPU 0000:99:00.0": Status.FAIL}
    assert "mlx5_0 is PXB" in got["GPU 0000:09:00.0"].message
    assert "mlx5_9 is missing" in got["GPU 0000:85:00.0"].message
    got = {r.subject: r for r in run_check("topology.gpu_nic", root, {"max_level": "PHB"},
                                           live=True)}
    assert {r.status for r in got.values()} == {Status.PASS}


def test_no_nic_within_max_level(make_root) -> None:
    files, links = hgx()
    links = {k: v for k, v in links.items() if not k.startswith("/sys/class/infiniband")}
    got = run_check("topology.gpu_nic", make_root(files, links), {"max_level": "NODE"},
                    live=True)
    assert {r.status for r in got} == {Status.FAIL}
    assert "no NIC within NODE (nearest: none)" in got[0].message


def test_degraded_bridge(make_root) -> None:
    files, links = hgx(narrow=True)
    got = {r.subject: r for r in run_check("topology.gpu_nic", make_root(files, links),
                                           live=True)}
    bad = got["GPU 0000:05:00.0"]
    assert bad.status is Status.FAIL and "0000:03:00.0 above it runs x8 of x16" in bad.message
    assert bad.remediation is not None and "riser" in bad.remediation.summary
    assert got["GPU 0000:09:00.0"].status is Status.PASS


def test_offline(make_root) -> None:
    files, links = hgx()
    [r] = run_check("topology.gpu_nic", make_root(files, links))
    assert r.status is Status.SKIP


def test_nic_named_by_its_function_address(make_root) -> None:
    """The kernel's ``device`` link names the PCI function (``../../../0000:06:00.0``): the
    NIC's place is taken from the scan's PCI list, and is the place the ``../..`` form of
    the same link resolves to."""
    files, links = hgx()
    plain = {g.bdf: g for g in affinity.gpu_places(
        Host(str(make_root(files, links)), live=True))}
    named = dict(links)
    for k in list(named):
        if k.endswith("/device") and "/infiniband/" in k:
            nic_bdf = k.split("/infiniband/")[0].rsplit("/", 1)[-1]
            named[k] = f"../../../{nic_bdf}"
    host = Host(str(make_root(files, named)), live=True)
    assert [(n.name, n.path, n.numa) for n in affinity.nics(host)] == \
        [(n.name, n.path, n.numa) for n in affinity.nics(
            Host(str(make_root(files, links)), live=True))]
    assert {g.bdf: g for g in affinity.gpu_places(host)} == plain
