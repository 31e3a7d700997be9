"""Issue 29: the class facts every scan records (``inventory.facts``, the baseline's facts)
are drift dimensions of the fleet: "VBIOS 96.00.89.00.01 on 30/32 nodes; 2 outliers"."""

from __future__ import annotations

import json
from typing import Any

from aiaudit.fleet import bounds
from aiaudit.fleet.aggregate import aggregate
from aiaudit.fleet.extract import class_facts, from_report
from aiaudit.fleet.model import Fleet
from aiaudit.fleet.render import RENDERERS
from tests.fleet.reports import report

VBIOS = "96.00.89.00.01"
BUS = [f"0000:{b:02x}:00.0" for b in (0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb)]


def _node(i: int, facts: Any) -> dict[str, Any]:
    """Node ``gpu{i:02d}`` whose ``NODE-FACTS`` result recorded ``facts``."""
    d = report(f"gpu{i:02d}", f"{i:032x}")
    (r,) = [r for r in d["results"] if r["check"] == "inventory.facts"]
    r["data"] = {"facts": facts, "sources": {}, "live": {}, "unknown": {}}
    return d


def _facts(vbios: str = VBIOS, widths: list[int] | None = None, count: int = 8) -> dict:
    return {"gpu.nvidia.count": count, "gpu.nvidia.model": "NVIDIA H100 80GB HBM3",
            "gpu.nvidia.vbios": dict.fromkeys(BUS[:count], vbios),
            "gpu.pcie.width": dict(zip(BUS, widths or [16] * count, strict=False)),
            "memory.total_gib": 2015.5}


def _fleet(*docs: dict[str, Any]) -> Fleet:
    return aggregate(from_report(d, f"r{i}.json") for i, d in enumerate(docs))


def test_a_node_with_another_vbios_is_an_outlier_everywhere() -> None:
    docs = [_node(i, _facts()) for i in range(1, 33)]
    docs[6] = _node(7, _facts(vbios="96.00.74.00.01"))
    docs[18] = _node(19, _facts(vbios="96.00.74.00.01"))
    fleet = _fleet(*docs)
    (d,) = [d for d in fleet.facts if d.subject == "gpu.nvidia.vbios"]
    assert d.majority == f"{VBIOS} (8 devices)"
    assert fleet.names(d.outliers) == ["gpu07", "gpu19"]
    assert [f.subject for f in fleet.facts] == ["gpu.nvidia.vbios"]  # the rest agree
    text = RENDERERS["text"](fleet, "medium", 0)
    assert f"gpu.nvidia.vbios: {VBIOS} (8 devices) on 30/32 nodes; 2 outlier(s):" in text
    assert "96.00.74.00.01 (8 devices): gpu[07,19]" in text
    doc = json.loads(RENDERERS["json"](fleet, "medium", 0))
    (fact,) = doc["host_facts"]
    assert fact["subject"] == "gpu.nvidia.vbios"
    assert "gpu.nvidia.vbios" in RENDERERS["html"](fleet, "medium", 0)
    assert 'subject="gpu.nvidia.vbios"' in RENDERERS["prometheus"](fleet, "medium", 0)


def test_a_missing_gpu_and_a_narrow_link_are_outliers_of_their_facts() -> None:
    docs = [_node(i, _facts()) for i in range(1, 6)]
    docs.append(_node(6, _facts(count=7)))
    docs.append(_node(7, _facts(widths=[16, 16, 16, 8, 16, 16, 16, 16])))
    fleet = _fleet(*docs)
    by = {d.subject: d for d in fleet.facts}
    assert fleet.names(by["gpu.nvidia.count"].outliers) == ["gpu06"]
    width = by["gpu.pcie.width"]
    assert width.majority == "16 (8 devices)"
    assert {v.value: fleet.names(v.nodes) for v in width.values[1:]} == {
        "16 (7 devices)": ["gpu06"], "16 (7 devices), 8 (1 device)": ["gpu07"]}


def test_a_report_without_the_facts_rule_has_none() -> None:
    d = report("gpu01", "a" * 32)
    d["results"] = [r for r in d["results"] if r["check"] != "inventory.facts"]
    assert not [n for n, _v in from_report(d, "x").facts if "." in n]


def test_hostile_facts_are_bounded_and_skipped() -> None:
    facts: dict[str, Any] = {f"x.f{i}": "v" for i in range(100_000)}
    got = class_facts([{"check": "inventory.facts", "data": {"facts": facts}}])
    assert len(got) == bounds.MAX_CLASS_FACTS
    bad = {"Not A Name": 1, "a..b": 1, "a" * 200: 1, "ok.deep": [[[["x" * 10_000]]]],
           "ok.map": {f"d{i}": i % 2 for i in range(1_000_000)}, "ok.none": None}
    got = dict(class_facts([{"check": "inventory.facts", "data": {"facts": bad}}]))
    assert set(got) == {"ok.deep", "ok.map"}
    assert len(got["ok.deep"]) <= 200
    assert got["ok.map"] == "0 (512 devices), 1 (512 devices)"  # MAX_DEVICES read
    for data in (None, [], {"facts": "x"}, {"facts": [1, 2]}):
        assert class_facts([{"check": "inventory.facts", "data": data}]) == ()
