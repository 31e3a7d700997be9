"""Issue 29, fleet identity: a node is its machine id and DMI product UUID, the host name a
label; shared names and ids are reported, never merged silently; text, JSON, HTML,
Prometheus and the gate count nodes the same way in every case."""

from __future__ import annotations

import json
import re

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiaudit.core.ruleset import schema
from aiaudit.fleet.aggregate import aggregate
from aiaudit.fleet.extract import from_report
from aiaudit.fleet.gate import exit_code, failing_nodes
from aiaudit.fleet.identity import resolve
from aiaudit.fleet.model import Fleet
from aiaudit.fleet.render import RENDERERS
from tests.fleet.reports import report

SWAP = "SYSCTL-VM-SWAPPINESS"
A, B, C = "a" * 32, "b" * 32, "c" * 32
U1, U2 = "4c4c4544-0000-1000-8000-000000000001", "4c4c4544-0000-1000-8000-000000000002"


def rep(host: str, mid: str | None, uuid: str | None = None, *, fail: bool = False,
        started: str = "2026-12-01T10:00:00Z") -> dict:
    """A node whose every rule passes, but swappiness when ``fail``."""
    d = report(host, mid, host={"product_uuid": uuid}, started=started)
    for r in d["results"]:
        r["status"] = r["check_status"] = "pass" if r["status"] in ("fail", "error") \
            else r["status"]
        if r["rule_id"] == SWAP:
            r["status"] = r["check_status"] = "fail" if fail else "pass"
            r["actual"] = "60" if fail else "10"
    d["run_id"] = f"run-{host}-{mid}-{uuid}-{started}-{fail}"
    return d


def fleet_of(*reports: dict) -> Fleet:
    return aggregate(from_report(d, f"r{i}.json") for i, d in enumerate(reports))


def _kinds(fleet: Fleet) -> dict[str, list[str]]:
    return {f.kind: fleet.names(f.nodes) for f in fleet.identity}


def _counts(fleet: Fleet) -> dict[str, int]:
    """Node counts as every output states them (they must all agree)."""
    text = RENDERERS["text"](fleet, "medium", 0)
    doc = json.loads(RENDERERS["json"](fleet, "medium", 0))
    jsonschema.validate(doc, schema("fleet.schema.json"))  # conflicts and findings too
    page = RENDERERS["html"](fleet, "medium", 0)
    prom = RENDERERS["prometheus"](fleet, "medium", 0)
    return {
        "model": fleet.node_count,
        "text": int(re.search(r"aiaudit fleet: (\d+) node\(s\)", text).group(1)),
        "json": doc["summary"]["nodes"],
        "html": int(re.search(r"<h1>aiaudit fleet: (\d+) node\(s\)", page).group(1)),
        "prometheus": int(re.search(r"^aiaudit_fleet_distinct_nodes (\d+)$", prom,
                                    re.M).group(1)),
        "failing text": int(re.search(r"; (\d+) node\(s\) fail a rule", text).group(1)),
        "failing json": doc["summary"]["failing_nodes"],
        "failing html": int(re.search(r"; (\d+) node\(s\) fail a rule", page).group(1)),
        "failing gate": len(failing_nodes(fleet, "medium")),
        "exit json": doc["summary"]["exit_code"],
        "exit gate": int(exit_code(fleet, "medium", 0)),
    }


def _agree(fleet: Fleet) -> dict[str, int]:
    c = _counts(fleet)
    assert len({c["model"], c["text"], c["json"], c["html"], c["prometheus"]}) == 1, c
    assert len({c["failing text"], c["failing json"], c["failing html"],
                c["failing gate"]}) == 1, c
    assert c["exit json"] == c["exit gate"], c
    return c


def test_one_host_name_three_machine_ids_is_three_nodes() -> None:
    """Issue 29's example: three reports, three machine ids, one builder's host name: the
    fleet said "2 nodes", the gate "1 node(s) fail", every rule line "(2 nodes)"."""
    fleet = fleet_of(rep("debian", A, fail=True), rep("debian", B, fail=True),
                     rep("debian", C))
    c = _agree(fleet)
    assert c["model"] == 3 and c["failing gate"] == 2
    row = next(r for r in fleet.groups[0].rules if r.rule_id == SWAP)
    assert len(row.failing) == 2 and row.count("pass") == 1
    assert _kinds(fleet) == {"duplicate-hostname": ["debian"] * 3}
    doc = json.loads(RENDERERS["json"](fleet, "medium", 0))
    rule = next(r for r in doc["groups"][0]["rules"] if r["id"] == SWAP)
    assert rule["failing"] == {"count": 2, "hosts": "debian"}
    assert "2/3 fail  debian" in RENDERERS["text"](fleet, "medium", 0)
    assert not fleet.conflicts


def test_one_identity_under_two_host_names_is_one_node_and_a_conflict() -> None:
    fleet = fleet_of(rep("gpu01", A, U1, fail=True),
                     rep("gpu02", A, U1, started="2026-12-01T11:00:00Z"))
    _agree(fleet)
    assert fleet.node_count == 1
    node = fleet.nodes[0]
    assert node.hostname == "gpu02" and node.hostnames == ("gpu01", "gpu02")
    assert len(fleet.conflicts) == 1
    assert any("under 2 host names" in p for p in fleet.problems)
    assert len(failing_nodes(fleet, "medium")) == 1  # the older report's failure counts


def test_a_cloned_machine_id_is_two_nodes_and_a_high_finding() -> None:
    fleet = fleet_of(rep("gpu01", A, U1), rep("gpu02", A, U2))
    c = _agree(fleet)
    assert c["model"] == 2 and c["exit gate"] == 1
    (f,) = fleet.identity
    assert f.kind == "duplicate-machine-id" and f.severity == "high"
    assert f.product_uuids == (U1, U2)
    text = RENDERERS["text"](fleet, "medium", 0)
    assert "2 different product UUIDs: an image cloned" in text


def test_the_same_host_and_machine_id_with_two_uuids_is_two_nodes() -> None:
    fleet = fleet_of(rep("gpu01", A, U1), rep("gpu01", A, U2))
    _agree(fleet)
    assert fleet.node_count == 2
    assert set(_kinds(fleet)) == {"duplicate-machine-id", "duplicate-hostname"}


def test_without_uuids_a_shared_machine_id_cannot_be_merged() -> None:
    """Non-root scans cannot read the product UUID: a machine id under two names may be a
    clone or a rename, so both count and the finding says so."""
    fleet = fleet_of(rep("gpu01", A), rep("gpu02", A))
    _agree(fleet)
    assert fleet.node_count == 2
    (f,) = fleet.identity
    assert f.kind == "duplicate-machine-id"
    assert "product UUIDs not readable" in RENDERERS["text"](fleet, "medium", 0)


def test_a_report_without_uuid_joins_its_node() -> None:
    """A non-root scan of a node also scanned as root: same machine id and host name."""
    fleet = fleet_of(rep("gpu01", A, U1), rep("gpu01", A, None, fail=True,
                                              started="2026-12-01T09:00:00Z"))
    _agree(fleet)
    assert fleet.node_count == 1 and len(fleet.conflicts) == 1
    assert len(failing_nodes(fleet, "medium")) == 1


def test_placeholder_uuids_name_no_machine() -> None:
    zero = "00000000-0000-0000-0000-000000000000"
    fleet = fleet_of(rep("gpu01", A, zero), rep("gpu02", B, zero),
                     rep("gpu03", C, "03000200-0400-0500-0006-000700080009"))
    _agree(fleet)
    assert fleet.node_count == 3 and not fleet.identity
    assert all(n.product_uuid is None for n in fleet.nodes)


def test_a_shared_product_uuid_is_a_low_finding() -> None:
    fleet = fleet_of(rep("vm01", A, U1), rep("vm02", B, U1))
    c = _agree(fleet)
    assert c["model"] == 2 and c["exit gate"] == 0
    assert _kinds(fleet) == {"duplicate-product-uuid": ["vm01", "vm02"]}
    assert int(exit_code(fleet, "low", 0)) == 1


def test_no_ids_at_all_is_keyed_by_host_name() -> None:
    fleet = fleet_of(rep("gpu01", None), rep("gpu01", None, started="2026-12-01T11:00:00Z"),
                     rep("gpu02", None))
    _agree(fleet)
    assert fleet.node_count == 2 and len(fleet.conflicts) == 1


def test_a_node_in_two_groups_counts_once() -> None:
    """Reports of one node from two aiaudit versions: one node, in both groups, failing
    once fleet-wide."""
    old = rep("gpu01", A, U1, fail=True)
    new = rep("gpu01", A, U1, fail=True, started="2026-12-01T11:00:00Z")
    new["tool"]["version"] = "0.2.0"
    fleet = fleet_of(old, new, rep("gpu02", B, U2))
    c = _agree(fleet)
    assert c["model"] == 2 and c["failing gate"] == 1
    assert [len(g.nodes) for g in fleet.groups] == [2, 1]


# ---------------------------------------------------------------- random identity collisions
_hosts = st.sampled_from(["gpu01", "gpu02", "gpu03"])
_mids = st.sampled_from([None, A, B])
_uuids = st.sampled_from([None, U1, U2, "ffffffff-ffff-ffff-ffff-ffffffffffff"])
_reports = st.lists(st.tuples(_hosts, _mids, _uuids, st.booleans(),
                              st.integers(min_value=0, max_value=3)), min_size=1, max_size=7)


def _oracle(reports: list[tuple[str, str | None, str | None]]) -> int:
    """Distinct nodes as issue 29 defines them, computed another way: a report with a
    known UUID is the node (machine id, UUID); one without joins the single such node with
    its machine id and host name, else it is (machine id, host name), else (host name)."""
    placeholder = "ffffffff-ffff-ffff-ffff-ffffffffffff"
    known = [(h, m, u) for h, m, u in reports if u is not None and u != placeholder]
    nodes = {("uuid", m, u) for _h, m, u in known}
    for h, m, u in reports:
        if u is not None and u != placeholder:
            continue
        if m is None:
            nodes.add(("name", h))
            continue
        owners = {(mm, uu) for hh, mm, uu in known if mm == m and hh == h}
        if len(owners) != 1:
            nodes.add(("mid", m, h))
    return len(nodes)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_reports)
def test_random_identity_collisions_count_alike_everywhere(reports: list) -> None:
    docs = [rep(h, m, u, fail=f, started=f"2026-12-01T1{t}:00:00Z")
            for h, m, u, f, t in reports]
    fleet = fleet_of(*docs)
    c = _agree(fleet)
    assert c["model"] == _oracle([(h, m, u) for h, m, u, _f, _t in reports])
    # every node once; groups, rows and columns count nodes, not names
    assert sorted(i for g in fleet.groups for i in g.nodes) == list(range(fleet.node_count))
    for g in fleet.groups:
        assert sum(len(col.nodes) for col in g.columns) == len(g.nodes)
        for row in g.rules:
            assert sum(n for _s, n in row.counts) == len(g.nodes)
    # a node fails when any report that claims it fails (no report replaces another)
    keys = resolve([(h, m, u if u != "ffffffff-ffff-ffff-ffff-ffffffffffff" else None)
                    for h, m, u, _f, _t in reports])
    failing_keys = {k for k, (_h, _m, _u, f, _t) in zip(keys, reports, strict=True) if f}
    assert c["failing gate"] == len(failing_keys)
    # shared names and ids are findings, and several reports of one node a conflict
    names = [n.hostname for n in fleet.nodes]
    for name in set(names):
        if names.count(name) > 1:
            assert any(f.kind == "duplicate-hostname" and f.key == name
                       for f in fleet.identity)
    assert len(fleet.conflicts) == sum(1 for n in fleet.nodes if n.reports > 1)
    assert sum(n.reports for n in fleet.nodes) <= len(reports)
