"""The kind of root in every report: the JSON host field (schema-valid, round-tripped,
absent from reports saved before it), the provisioner's part of a fix, and the header of
the text and HTML reports."""

from __future__ import annotations

import json

import jsonschema

from aiaudit.core import plugins, ruleset
from aiaudit.core.host import Host
from aiaudit.core.scan import ScanOptions, scan
from aiaudit.core.serialize import run_dict, run_from_dict
from aiaudit.reporters import html, text
from tests.helpers import ROOTS

WAREWULF = ROOTS / "image-stateless-warewulf-debian12" / "root"


def _validator():
    doc = ruleset.schema("report.schema.json")
    cls = jsonschema.validators.validator_for(doc)
    return cls(doc, format_checker=cls.FORMAT_CHECKER)


def _run(**opts):
    rs = ruleset.load("dl-training", plugins.registry())
    return scan(rs, Host(str(WAREWULF), live=False),
                ScanOptions(only=("CPU-CSTATE-LATENCY", "CPU-TURBO-ENABLED"), **opts))


def test_json_host_kind_and_provisioner_fix_are_valid_and_round_trip() -> None:
    run = _run(kernel_cmdline="quiet")
    doc = run_dict(run)
    assert doc["host"]["image_kind"] == "stateless"
    assert doc["host"]["image_kind_reason"].startswith("Warewulf node image")
    cstate = next(r for r in doc["results"] if r["rule_id"] == "CPU-CSTATE-LATENCY")
    assert cstate["remediation"]["provisioner"].startswith("Warewulf: wwctl profile set")
    errors = list(_validator().iter_errors(json.loads(json.dumps(doc))))
    assert not errors, [e.message for e in errors]
    back = run_from_dict(doc)
    assert back.host == run.host
    assert [f.result.remediation for f in back.findings] == \
        [f.result.remediation for f in run.findings]


def test_report_saved_before_the_kind_was_recorded_still_loads() -> None:
    doc = run_dict(_run())
    for key in ("image_kind", "image_kind_reason"):
        del doc["host"][key]
    for r in doc["results"]:
        if r.get("remediation"):
            r["remediation"].pop("provisioner", None)
    assert not list(_validator().iter_errors(doc))
    old = run_from_dict(doc)
    assert old.host.image_kind is None and old.host.image_kind_reason is None
    out = text.render(old, {"color": False})
    assert "Kind:" not in out
    assert "<dt>kind</dt>" not in html.render(old, {})
    # an unknown kind is refused by the schema
    doc["host"]["image_kind"] = "vm"
    assert list(_validator().iter_errors(doc))


def test_headers_name_the_kind() -> None:
    run = _run()
    lines = text.render(run, {"color": False}).splitlines()
    kind = [ln for ln in lines[:4] if ln.startswith("Kind: ")]
    assert kind == ["Kind: stateless image (Warewulf node image (etc/warewulf/excludes): the "
                    "provisioner boots it and passes its kernel command line)"]
    page = html.render(run, {})
    assert "<dt>kind</dt><dd>stateless image (Warewulf node image" in page
