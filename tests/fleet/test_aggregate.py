"""Aggregation: per-rule counts and host lists, groups, drift, identity, --since."""

from __future__ import annotations

import io
import json

from aiaudit.fleet.aggregate import aggregate
from aiaudit.fleet.collect import collect
from aiaudit.fleet.extract import from_report
from aiaudit.fleet.model import Fleet
from aiaudit.fleet.since import compare, failing_by_host
from tests.fleet.reports import report

DRIVER = "GPU-DRIVER-LIBRARY-MATCH"
SWAP = "SYSCTL-VM-SWAPPINESS"


def _fleet(reports: list[dict]) -> Fleet:
    return aggregate(from_report(d, f"r{i}") for i, d in enumerate(reports))


def _previous(fleet: Fleet):
    from aiaudit.fleet.render.json import render
    from aiaudit.fleet.since import parse_previous

    return parse_previous(render(fleet, "medium", 0), "before.json")


def _row(fleet: Fleet, rule: str, group: int = 0):
    return next(r for r in fleet.groups[group].rules if r.rule_id == rule)


def test_per_rule_counts_and_failing_host_lists() -> None:
    reps = [report(f"gpu{i:03d}", f"{i:032x}", results={SWAP: ("pass", "10")})
            for i in range(1, 41)]
    reps[4] = report("gpu005", f"{5:032x}", results={SWAP: ("fail", "60")})
    reps[39] = report("gpu040", f"{40:032x}", results={SWAP: ("error", None)})
    fleet = _fleet(reps)
    row = _row(fleet, SWAP)
    assert row.count("pass") == 38 and row.count("fail") == 1 and row.count("error") == 1
    assert fleet.names(row.failing) == ["gpu005"] and fleet.names(row.erroring) == ["gpu040"]
    assert fleet.node_count == 40


def test_a_node_has_its_worst_status_over_the_subjects_of_a_rule() -> None:
    # FW-DEFAULT-DENY-INPUT has two subjects (ipv4, ipv6) in the base scan
    good = report("n1", results={"FW-DEFAULT-DENY-INPUT": ("pass", "drop")})
    half = report("n2", results={("FW-DEFAULT-DENY-INPUT", "ipv4 (boot)"): ("pass", "drop"),
                                 ("FW-DEFAULT-DENY-INPUT", "ipv6 (boot)"): ("fail", "accept")})
    fleet = _fleet([good, half])
    row = _row(fleet, "FW-DEFAULT-DENY-INPUT")
    assert fleet.names(row.failing) == ["n2"] and row.count("pass") == 1


def test_versions_and_rulesets_are_grouped_not_mixed() -> None:
    fleet = _fleet([report("a1"), report("a2", tool_version="0.2.0"),
                    report("a3", ruleset_version="1.1"), report("a4")])
    labels = [(g.group.tool_version, g.group.ruleset_version, fleet.names(g.nodes))
              for g in fleet.groups]
    assert labels == [("0.1.0", "1.0", ["a1", "a4"]), ("0.2.0", "1.0", ["a2"]),
                      ("0.1.0", "1.1", ["a3"])]


def test_two_reports_of_one_node_are_a_conflict_judged_by_the_worst() -> None:
    """Issue 25 (replay): a newer report no longer replaces an older one; both stay
    visible, and the node fails what either says it fails."""
    old = report("n1", "1" * 32, results={SWAP: ("fail", "60")}, started="2026-11-30T00:00:00Z")
    new = report("n1", "1" * 32, results={SWAP: ("pass", "10")}, started="2026-12-01T00:00:00Z")
    for order in ([old, new], [new, old]):
        fleet = _fleet(order)
        assert fleet.node_count == 1 and fleet.reports == 2
        assert fleet.names(_row(fleet, SWAP).failing) == ["n1"]
        assert len(fleet.conflicts) == 1
        assert [r.started for r in fleet.conflicts[0].reports] == ["2026-12-01T00:00:00Z",
                                                                   "2026-11-30T00:00:00Z"]
        assert len(fleet.problems) == 1 and "2 different reports claim this node" \
            in fleet.problems[0]


def test_the_same_report_read_twice_counts_once() -> None:
    d = report("n1", "1" * 32, results={SWAP: ("fail", "60")})
    fleet = _fleet([d, d])
    assert fleet.node_count == 1 and not fleet.conflicts and not fleet.problems
    assert len(fleet.notices) == 1 and "the same report" in fleet.notices[0]


def test_drift_finds_outliers_that_pass() -> None:
    reps = [report(f"gpu{i:03d}", results={DRIVER: ("pass", "550.54.15")}) for i in range(1, 126)]
    reps += [report(f"gpu{i:03d}", results={DRIVER: ("pass", "535.161.08")})
             for i in (126, 127, 128)]
    fleet = _fleet(reps)
    d = next(d for d in fleet.drift if d.rule_id == DRIVER)
    assert d.majority == "550.54.15"
    assert fleet.names(d.outliers) == ["gpu126", "gpu127", "gpu128"]
    assert [(v.value, len(v.nodes)) for v in d.values] == [("550.54.15", 125),
                                                           ("535.161.08", 3)]
    assert _row(fleet, DRIVER).failing == ()


def test_drift_without_majority_lists_values_but_no_outliers() -> None:
    reps = [report("a1", results={SWAP: ("pass", "1")}),
            report("a2", results={SWAP: ("pass", "5")})]
    d = next(d for d in _fleet(reps).drift if d.rule_id == SWAP)
    assert d.majority is None and d.outliers == ()
    assert {v.value for v in d.values} == {"1", "5"}


def test_host_facts_are_compared() -> None:
    reps = [report(f"n{i}") for i in range(5)]
    reps.append(report("n9", host={"kernel": "6.1.0-13-amd64"}))
    fleet = _fleet(reps)
    facts = {d.subject: d for d in fleet.facts}
    assert set(facts) == {"kernel"}
    assert facts["kernel"].majority == "6.1.0-18-amd64"
    assert fleet.names(facts["kernel"].outliers) == ["n9"]


def test_cloned_machine_ids_and_reused_hostnames() -> None:
    reps = [report("gpu001", "c" * 32), report("gpu002", "c" * 32), report("gpu003", "d" * 32),
            report("gpu003", "e" * 32), report("gpu004")]
    fleet = _fleet(reps)
    kinds = {(f.kind, f.key): (fleet.names(f.nodes), f.machine_ids) for f in fleet.identity}
    assert kinds == {("duplicate-machine-id", "c" * 32): (["gpu001", "gpu002"], ("c" * 32,)),
                     ("duplicate-hostname", "gpu003"): (["gpu003", "gpu003"],
                                                        ("d" * 32, "e" * 32))}
    assert fleet.node_count == 5


def test_since_previous_fleet_report() -> None:
    before = _fleet([report("n1", results={SWAP: ("fail", "60")}), report("n2"),
                     report("n3")])
    after = _fleet([report("n1", results={SWAP: ("pass", "10")}),
                    report("n2", results={"MEM-SWAP-OFF": ("fail", "swap on")}),
                    report("n4")])
    s = compare(after, _previous(before), "before.json")
    changes = {c.host: (c.worse, c.better) for c in s.changes}
    assert changes == {"n1": ((), (SWAP,)), "n2": (("MEM-SWAP-OFF",), ())}
    assert s.new_hosts == ("n4",) and s.gone_hosts == ("n3",)
    assert failing_by_host(after)[0]["n2"] >= {"MEM-SWAP-OFF"}


def test_stream_of_many_reports_keeps_no_document() -> None:
    """A stream is aggregated one document at a time: the memory allocated while reading
    200 reports (26 MB of JSON) stays at a few documents' worth, where holding them would
    take well over 100 MB of decoded objects."""
    import tracemalloc

    lines = [json.dumps(report(f"n{i:03d}", f"{i:032x}")) for i in range(200)]
    stream = io.StringIO("\n".join(lines) + "\n")
    del lines
    tracemalloc.start()
    try:
        fleet = collect(["-"], stdin=stream, jobs=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fleet.node_count == 200
    assert peak < 12 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
