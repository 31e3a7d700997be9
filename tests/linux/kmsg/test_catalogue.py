"""The shipped Xid catalogue (``checks/data/xid_catalogue.json``) and rule extensions."""

from __future__ import annotations

import json

import pytest

from aiaudit.core import resources
from aiaudit.core.errors import ParseError
from aiaudit.linux.kmsg.catalogue import DATA, extended, parse, shipped


def test_shipped_catalogue_parses_and_names_its_source() -> None:
    c = shipped()
    assert len(c.xid) >= 160
    assert "docs.nvidia.com/deploy/xid-errors" in c.source
    assert c.read  # the date it was read
    doc = json.loads(resources.read_text("aiaudit.checks", DATA))
    assert "NVSentinel" in doc["source"]["xid_transcribed_from"]


@pytest.mark.parametrize(("code", "action"), [
    ("79", "RESTART_BM"), ("48", "WORKFLOW_XID_48"), ("13", "RESTART_APP"),
    ("31", "RESTART_APP"), ("43", "IGNORE"), ("45", "WORKFLOW_XID_45"),
    ("94", "RESTART_APP"), ("95", "RESET_GPU"), ("74", "WORKFLOW_NVLINK_ERR"),
    ("119", "RESET_GPU"), ("149", "WORKFLOW_NVLINK5_ERR"), ("63", "IGNORE"),
    ("64", "RESET_GPU"),
])
def test_actions_of_well_known_codes(code: str, action: str) -> None:
    """Spot checks against NVIDIA's catalogue (Resolution Bucket, Immediate Action)."""
    assert shipped().entry(code).action == action


def test_every_action_is_explained() -> None:
    c = shipped()
    assert {e.action for e in c.xid.values()} <= set(c.actions)


def test_an_unknown_code_is_not_judged_by_action() -> None:
    assert shipped().entry("999").action == "UNKNOWN"


def test_rule_params_extend_and_override() -> None:
    c = extended(shipped(), {"170": {"action": "RESET_GPU", "mnemonic": "NEW"},
                             "13": {"action": "RESET_GPU"}})
    assert c.entry("170").action == "RESET_GPU" and c.entry("170").origin == "ruleset params"
    assert c.entry("13").action == "RESET_GPU"
    assert c.entry("13").mnemonic.startswith("ROBUST_CHANNEL_GR_EXCEPTION")
    assert shipped().entry("13").action == "RESTART_APP"  # the shipped table is unchanged


@pytest.mark.parametrize("doc", [[], {"xid": []}, {"xid": {"x": {"action": "A"}}},
                                 {"xid": {"1": {"mnemonic": "M"}}}])
def test_a_broken_catalogue_is_a_parse_error(doc: object) -> None:
    with pytest.raises(ParseError):
        parse(doc)
