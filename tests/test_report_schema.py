"""Reports validate against ``schemas/report.schema.json``; shipped rulesets and every
rule's params validate against their schemas (so scans may skip re-validating them)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from aiaudit.core import plugins, ruleset
from aiaudit.core.host import Host
from aiaudit.core.model import Status, Waiver
from aiaudit.core.scan import ScanOptions, scan
from aiaudit.core.serialize import run_dict, run_from_dict
from aiaudit.reporters.json import render
from tests.helpers import FIXTURES, ROOTS

REGISTRY = plugins.registry()
SHIPPED = sorted(n for n, s in REGISTRY.rulesets.items() if s.origin.startswith("aiaudit."))


def _validator(name: str):
    doc = ruleset.schema(name)
    cls = jsonschema.validators.validator_for(doc)
    cls.check_schema(doc)
    return cls(doc, format_checker=cls.FORMAT_CHECKER)


REPORT = _validator("report.schema.json")


def _assert_valid(doc) -> None:
    errors = sorted(REPORT.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def _json_report(rs_name: str, host: Host, **opts) -> dict:
    rs = ruleset.load(rs_name, REGISTRY)
    run = scan(rs, host, ScanOptions(**opts))
    return json.loads(render(run, {}))


def test_live_scan_of_this_machine_validates() -> None:
    doc = _json_report("dl-training", Host("/"))
    _assert_valid(doc)
    assert doc["host"]["mode"] == "live" and doc["host"]["root"] == "/"
    assert doc["tool"]["name"] == "aiaudit" and doc["results"]
    statuses = {r["status"] for r in doc["results"]}
    assert statuses <= {s.value for s in Status}


def test_offline_scan_of_fixture_validates() -> None:
    root = ROOTS / "sysctl-etc-overrides-vendor" / "root"
    doc = _json_report("dl-training", Host(str(root)))
    _assert_valid(doc)
    assert doc["host"]["mode"] == "offline"
    fails = [r for r in doc["results"] if r["status"] == "fail"]
    assert fails and all(r["remediation"]["snippets"] for r in fails)
    assert any(e["source"].startswith("etc/sysctl.d/") for r in doc["results"]
               for e in r["evidence"])


def test_mixed_run_with_waiver_error_and_notices_validates(make_root) -> None:
    root = make_root({"/etc/sysctl.d/10.conf": "vm.swappiness = 60\n",
                      "/usr/lib/sysctl.d/50-bin.conf": b"\x00"})
    rs = ruleset.load(str(FIXTURES / "rulesets" / "small.yaml"), REGISTRY)
    waiver = Waiver("SMALL-*", "accepted", "ops", "2999-01-01", source="waivers.yaml:1")
    unused = Waiver("OTHER", "stale", "ops", "2000-01-01")
    run = scan(rs, Host(str(root)), ScanOptions(waivers=(waiver, unused)))
    doc = run_dict(run)
    _assert_valid(doc)
    assert doc["summary"]["by_status"]["error"] == 2 and doc["notices"]
    # the JSON report is lossless
    assert run_dict(run_from_dict(json.loads(json.dumps(doc)))) == doc


def test_schema_rejects_a_broken_report() -> None:
    doc = _json_report("dl-training", Host(str(ROOTS / "sysctl-etc-overrides-vendor/root")))
    doc["results"][0]["status"] = "maybe"
    del doc["host"]
    assert len(list(REPORT.iter_errors(doc))) >= 2


# ------------------------------------------------------------------ rulesets
RULESET = _validator("ruleset.schema.json")


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_ruleset_validates(name: str) -> None:
    import yaml

    src = REGISTRY.rulesets[name]
    data = yaml.safe_load(src.load())
    assert not list(RULESET.iter_errors(data))
    # every rule's params against its check's schema (what a scan skips for shipped sets)
    def leaves(items):  # a composite rule's parts (any_of / all_of, nested) in its place
        for item in items:
            kids = item.get("any_of") or item.get("all_of")
            yield from leaves(kids) if kids else [item]

    for rule in leaves(data.get("rules", [])):
        rule = {"id": "part", **rule}
        check = REGISTRY.checks[rule["check"]]
        cls = jsonschema.validators.validator_for(check.params_schema)
        cls.check_schema(check.params_schema)
        errors = list(cls(check.params_schema).iter_errors(rule.get("params") or {}))
        assert not errors, f"{rule['id']}: {errors[0].message}"
    # and the loader agrees when forced to validate
    rs = ruleset.load(name, REGISTRY, validate=True)
    assert len(rs.rules) == len(data["rules"])


def test_shipped_rule_ids_unique_and_documented() -> None:
    for name in SHIPPED:
        rs = ruleset.load(name, REGISTRY)
        ids = [r.id for r in rs.rules]
        assert len(ids) == len(set(ids))
        for r in rs.rules:
            assert r.info.rationale.strip() and r.info.references, r.id


def test_every_check_params_schema_is_valid() -> None:
    for spec in REGISTRY.checks.values():
        schema = spec.params_schema
        jsonschema.validators.validator_for(schema).check_schema(schema)
        assert schema.get("additionalProperties") is False, spec.id
