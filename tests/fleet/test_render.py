"""Every fleet renderer renders an empty fleet and a mixed one; JSON validates."""

from __future__ import annotations

import json

import jsonschema
import pytest

from aiaudit.core.ruleset import schema
from aiaudit.fleet.aggregate import aggregate
from aiaudit.fleet.extract import from_report
from aiaudit.fleet.model import Fleet
from aiaudit.fleet.render import RENDERERS
from aiaudit.fleet.render.text import hostlist
from tests.fleet.reports import report

EMPTY = Fleet(nodes=(), groups=(), drift=(), facts=(), identity=(), problems=(), notices=(),
              reports=0)


def _mixed() -> Fleet:
    reps = [report("gpu001", "a" * 32, results={"SYSCTL-VM-SWAPPINESS": ("fail", "60")}),
            report("gpu002", "a" * 32, results={"GPU-COUNT": ("error", None)}),
            report("gpu003", "b" * 32, tool_version="0.2.0"),
            report("gpu004", "c" * 32, host={"kernel": "6.1.0-13-amd64"})]
    return aggregate((from_report(d, f"r{i}") for i, d in enumerate(reps)),
                     problems=["bad.json:3: truncated JSON document"])


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
@pytest.mark.parametrize("fleet", [EMPTY, _mixed()], ids=["empty", "mixed"])
def test_renders(fmt: str, fleet: Fleet) -> None:
    text = RENDERERS[fmt](fleet, "medium", 0, top=5)
    assert text.endswith("\n")
    if fmt == "json":
        jsonschema.validate(json.loads(text), schema("fleet.schema.json"))


def test_text_host_lists_are_shortened_not_cut_mid_name() -> None:
    hosts = [f"n{i}x" for i in range(0, 2000, 2)]  # nothing folds: names end in a letter
    line = hostlist(hosts, limit=100)
    assert len(line) < 130 and line.endswith("(1000 nodes)")
    assert all(part.startswith("n") for part in line.split(",")[:-1])
