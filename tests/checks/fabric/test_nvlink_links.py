"""``fabric.nvlink_links``: link count and rate per GPU against its peers.  The passing
documents are the fixtures of ``tests/fixtures/gpu/nvlink`` (hand-made in the formats of
published captures); the failing ones are those documents with one value changed
(derived, labelled in each test)."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.core.model import Status
from tests.checks.fabric.nvlinkhost import STATUS, fixture, nvlink_host, run_on

HGX = fixture("hgx-a100-8x-status.txt")
BRIDGE = fixture("h100-pcie-bridge-status.txt")


def _links(host, params=None):
    return run_on(host, "fabric.nvlink_links", params)


def test_hgx_all_links_up(make_root) -> None:
    host = nvlink_host(make_root, HGX, nvswitches=6)
    got = _links(host)
    assert [r.status for r in got] == [Status.PASS] * 8
    assert "12 active at 25 GB/s" in got[0].message and got[0].data["nvswitches"] == 6
    assert host.calls == [STATUS]


def test_bridge_pair_passes_by_default(make_root) -> None:
    got = _links(nvlink_host(make_root, BRIDGE))
    assert [r.status for r in got] == [Status.PASS] * 2
    assert "6 inactive, as on its peers" in got[0].message
    # a site that expects 18 links per GPU says so
    got = _links(nvlink_host(make_root, BRIDGE), {"expected_links": 18})
    assert {r.status for r in got} == {Status.FAIL}
    assert "12 of 18 links active; inactive: link 4, 5, 10, 11, 16, 17" in got[0].message


def test_down_link_on_one_hgx_gpu_fails(make_root) -> None:  # derived: GPU 3 link 7 down
    lines = HGX.splitlines()
    at = lines.index("GPU 3: " + lines[0].split(": ", 1)[1].replace("1000", "1003")
                     .replace("0000-0028", "0003-0028").replace("000000000000", "000000000003"))
    lines[at + 8] = "\t Link 7: <inactive>"
    got = _links(nvlink_host(make_root, "\n".join(lines) + "\n", nvswitches=6))
    assert [r.status for r in got] == [Status.PASS] * 3 + [Status.FAIL] + [Status.PASS] * 4
    assert "11 of 12 links active; inactive: link 7" in got[3].message and got[3].remediation


def test_nvswitch_link_inactive_where_peers_have_it(make_root) -> None:  # derived
    # GPU 1 has link 2 down but link 12 up: as many links as its peers, the wrong ones
    head, tail = BRIDGE.split("GPU 1:")
    tail = tail.replace("Link 2: 26.562 GB/s", "Link 2: <inactive>").replace(
        "Link 4: <inactive>", "Link 4: 26.562 GB/s")
    text = head + "GPU 1:" + tail
    off = _links(nvlink_host(make_root, text))
    assert {r.status for r in off} == {Status.PASS}  # a bridge pair: counts only
    on = _links(nvlink_host(make_root, text, nvswitches=4))
    assert [r.status for r in on] == [Status.FAIL, Status.FAIL]
    assert "link 4 inactive while active on its peers" in on[0].message
    assert "link 2 inactive while active on its peers" in on[1].message


def test_slow_link_fails(make_root) -> None:  # derived: one link trained at a lower rate
    text = HGX.replace("\t Link 10: 25 GB/s", "\t Link 10: 12.5 GB/s", 1)
    got = _links(nvlink_host(make_root, text, nvswitches=6))
    assert got[0].status is Status.FAIL and "link 10 at 12.5 GB/s" in got[0].message
    assert {r.status for r in got[1:]} == {Status.PASS}
    got = _links(nvlink_host(make_root, HGX), {"min_speed_gbps": 26.562})
    assert {r.status for r in got} == {Status.FAIL}


def test_no_nvlink_is_not_applicable(make_root) -> None:
    for text in ("", fixture("a100-pcie-no-bridge-status.txt")):
        [r] = _links(nvlink_host(make_root, text))
        assert r.status is Status.SKIP and "no NVLink on this host" in r.message
    [r] = _links(nvlink_host(make_root, fixture("a100-pcie-no-bridge-status.txt")))
    assert "all links inactive" in r.message
    # a non-zero exit whose output is NVML's "no NVLink" verdict is an answer, not a failure
    [r] = _links(nvlink_host(make_root, "GPU 0: NVIDIA L4 (UUID: GPU-1)\nDevice does not "
                             "have or support Nvlink\n", rc=3))
    assert r.status is Status.SKIP and "no NVLink" in r.message


def test_nvswitch_gpu_without_links_fails(make_root) -> None:  # derived
    text = fixture("a100-pcie-no-bridge-status.txt")
    got = _links(nvlink_host(make_root, text, nvswitches=4))
    assert {r.status for r in got} == {Status.FAIL}
    assert "0 of 1 links active (all links inactive)" in got[0].message
    got = _links(nvlink_host(make_root, text), {"expected_links": 12})
    assert {r.status for r in got} == {Status.FAIL}
    [r] = _links(nvlink_host(make_root, "", nvswitches=4))
    assert r.status is Status.FAIL and "lists no GPU" in r.message


def test_unknown_state_and_command_failure(make_root) -> None:
    text = HGX.replace("\t Link 3: 25 GB/s", "\t Link 3: Training", 1)
    got = _links(nvlink_host(make_root, text))
    assert got[0].status is Status.ERROR and "'Training'" in got[0].message
    [r] = _links(nvlink_host(make_root, "Failed to initialize NVML: Driver/library version "
                             "mismatch\n", rc=18))
    assert r.status is Status.ERROR and "exited 18: Failed to initialize NVML" in r.message
    [r] = _links(nvlink_host(make_root, "garbage\n"))
    assert r.status is Status.ERROR and "unexpected nvidia-smi nvlink --status" in r.message


def test_never_runs_on_a_scanned_root(make_root) -> None:
    from tests.checks.readiness_trees import KO, gpu_host

    files, links = gpu_host(**KO)
    root = str(make_root(files, links))
    for host in (Host(root, live=True), Host(root)):  # a --live snapshot, an offline root
        [r] = _links(host)
        assert r.status is Status.SKIP and "never run from a scanned root" in r.message
    [r] = _links(Host(str(make_root({})), live=True))
    assert r.status is Status.SKIP and "GPU rules do not apply" in r.message


def test_hostile_output_is_bounded(make_root) -> None:
    """A megabyte of one token, endless link lines, 4 MiB of garbage: a result, quickly."""
    from tests.checks.fabric.nvlinkhost import ERRORS
    from tests.helpers import CpuTime

    docs = ["GPU 0: X\n" + "\t Link 1: 25 GB/s\n" * 70000,
            "GPU 0: X\n" + "Link 0: Replay Errors: 1\n" * 60000,
            "GPU 0: X\n" + ("y" * 1000 + "\n") * 4200,
            "GPU 0: " + "(UUID: " * 200000]
    for doc in docs:
        host = nvlink_host(make_root, doc, doc)
        with CpuTime() as t:
            got = _links(host) + run_on(host, "fabric.nvlink_errors")
        assert t.seconds < 5, f"{t.seconds:.1f} s of CPU"
        assert got and all(isinstance(r.status, Status) for r in got)
        assert sorted(host.calls) == [ERRORS, STATUS]


def test_real_h100_hgx_capture(make_root) -> None:
    """The real capture passes on an NVSwitch host; a link of it down fails (derived)."""
    real = fixture("awesome-ml-sys-h100-hbm3-gpu0-status.txt")
    [r] = _links(nvlink_host(make_root, real, nvswitches=4))
    assert r.status is Status.PASS and "18 active at 26.562 GB/s" in r.message
    [r] = _links(nvlink_host(make_root, real), {"expected_links": 18,
                                                "min_speed_gbps": 26.562})
    assert r.status is Status.PASS
    down = real.replace("Link 9: 26.562 GB/s", "Link 9: <inactive>")
    [r] = _links(nvlink_host(make_root, down, nvswitches=4), {"expected_links": 18})
    assert r.status is Status.FAIL and "17 of 18 links active; inactive: link 9" in r.message
