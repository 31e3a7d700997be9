"""SARIF reporter: schema validity (OASIS 2.1.0 schema, vendored) and what GitHub code
scanning needs (rules metadata, locations, fingerprints, categories, suppressions)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from aiaudit.model import Evidence
from aiaudit.reporters import sarif
from tests.helpers import FIXTURES
from tests.reporters.samples import SAMPLES, empty_run, mixed_run
from tests.reporters.scans import FIXTURE_ROOT, as_image, scan_root

SCHEMA = json.loads((FIXTURES / "reference" / "sarif-schema-2.1.0.json").read_text())


def validate(doc: dict) -> None:
    import jsonschema

    jsonschema.Draft4Validator.check_schema(SCHEMA)
    errors = list(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def render(run) -> dict:
    return json.loads(sarif.render(run, {}))


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_samples_validate(sample: str) -> None:
    validate(render(SAMPLES[sample]()))


def test_real_scan_validates() -> None:
    run = scan_root(FIXTURE_ROOT)
    doc = render(run)
    validate(doc)
    assert doc["runs"][0]["results"], "the fixture root has a failing rule"


def test_schema_rejects_a_broken_document() -> None:
    """The validation above can fail: a result without message is invalid SARIF."""
    import jsonschema

    doc = render(mixed_run())
    del doc["runs"][0]["results"][0]["message"]
    assert list(jsonschema.Draft4Validator(SCHEMA).iter_errors(doc))


def test_rules_carry_github_metadata() -> None:
    rules = render(mixed_run())["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [r.id for r in mixed_run().rules]
    by_id = {r["id"]: r for r in rules}
    for r in rules:
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"]
        assert r["help"]["text"] and r["help"]["markdown"]
        sev = r["properties"]["security-severity"]
        assert isinstance(sev, str) and 0.0 <= float(sev) <= 10.0
        assert "aiaudit" in r["properties"]["tags"]
    assert float(by_id["SSHD-PERMIT-ROOT-LOGIN"]["properties"]["security-severity"]) > 9.0
    assert 7.0 <= float(by_id["BLOCK-NVME-SCHEDULER"]["properties"]["security-severity"]) < 9
    assert by_id["BLOCK-NVME-SCHEDULER"]["defaultConfiguration"]["level"] == "error"
    assert by_id["SYSCTL-VM-SWAPPINESS"]["defaultConfiguration"]["level"] == "warning"
    assert by_id["CPU-GOVERNOR"]["defaultConfiguration"]["level"] == "note"
    assert "security" in by_id["SSHD-PERMIT-ROOT-LOGIN"]["properties"]["tags"]
    assert "echo none > /sys/block/nvme0n1/queue/scheduler" in \
        by_id["BLOCK-NVME-SCHEDULER"]["help"]["markdown"]
    assert "Set kernel.numa_balancing = 0." in \
        by_id["SYSCTL-KERNEL-NUMA-BALANCING"]["help"]["markdown"]


def test_results_only_for_failures_at_physical_locations() -> None:
    run = render(mixed_run())["runs"][0]
    res = {r["ruleId"]: r for r in run["results"]}
    assert set(res) == {"SYSCTL-VM-MAX-MAP-COUNT", "BLOCK-NVME-SCHEDULER",
                        "SYSCTL-KERNEL-NUMA-BALANCING"}
    rules = run["tool"]["driver"]["rules"]
    for r in run["results"]:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["kind"] == "fail"
    # the deciding file, relative to the scanned root, with its line
    loc = res["SYSCTL-VM-MAX-MAP-COUNT"]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "etc/sysctl.d/60-x.conf", "uriBaseId": "ROOT"}
    assert loc["region"] == {"startLine": 2}
    assert res["SYSCTL-VM-MAX-MAP-COUNT"]["level"] == "warning"
    # runtime-only state: the /sys path
    loc = res["BLOCK-NVME-SCHEDULER"]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "sys/block/nvme0n1/queue/scheduler"
    assert "region" not in loc
    assert res["BLOCK-NVME-SCHEDULER"]["level"] == "error"
    # only a default decided: the file the fix goes into
    loc = res["SYSCTL-KERNEL-NUMA-BALANCING"]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "etc/sysctl.d/99-zz-aiaudit.conf"
    assert run["originalUriBaseIds"]["ROOT"]["uri"] == "file:///"
    # the fix is in the alert text
    assert "sysctl -w vm.max_map_count='262144'" in \
        res["SYSCTL-VM-MAX-MAP-COUNT"]["message"]["text"]


def test_waived_result_is_suppressed() -> None:
    res = {r["ruleId"]: r for r in render(mixed_run())["runs"][0]["results"]}
    sup = res["SYSCTL-KERNEL-NUMA-BALANCING"]["suppressions"]
    assert sup == [{"kind": "external", "status": "accepted",
                    "justification": "vendor tuning for this GPU box",
                    "properties": {"owner": "ops-team", "expires": "2099-12-31",
                                   "source": "waivers.yaml:3"}}]
    assert "suppressions" not in res["SYSCTL-VM-MAX-MAP-COUNT"]


def test_skip_and_error_are_notifications() -> None:
    inv = render(mixed_run())["runs"][0]["invocations"][0]
    notes = inv["toolExecutionNotifications"]
    by_rule = {n["associatedRule"]["id"]: n for n in notes if "associatedRule" in n}
    assert by_rule["CPU-GOVERNOR"]["level"] == "note"
    assert "no cpufreq" in by_rule["CPU-GOVERNOR"]["message"]["text"]
    assert by_rule["SSHD-PERMIT-ROOT-LOGIN"]["level"] == "error"
    assert by_rule["SSHD-PERMIT-ROOT-LOGIN"]["associatedRule"]["index"] == 4
    assert any("matched no failure" in n["message"]["text"] for n in notes)


def test_fingerprints_are_stable_across_runs_and_separate_hosts() -> None:
    a = render(scan_root(FIXTURE_ROOT))["runs"][0]
    b = render(scan_root(FIXTURE_ROOT))["runs"][0]
    fa = [r["partialFingerprints"] for r in a["results"]]
    assert fa and fa == [r["partialFingerprints"] for r in b["results"]]
    assert a["automationDetails"]["id"] == b["automationDetails"]["id"]
    assert a["automationDetails"]["guid"] != b["automationDetails"]["guid"]  # run ids
    # a value change does not change the identity of the finding
    run = mixed_run()
    f = run.findings[1]
    changed = replace(run, findings=(replace(f, result=replace(f.result, actual="1")),))
    assert render(changed)["runs"][0]["results"][0]["partialFingerprints"] == \
        render(run)["runs"][0]["results"][0]["partialFingerprints"]
    # another host, or an image, is another category and another identity
    other = replace(run, host=replace(run.host, hostname="gpu-node-02"))
    image = as_image(run, "dl-base:2026.01")
    ids = {render(r)["runs"][0]["automationDetails"]["id"] for r in (run, other, image)}
    assert ids == {"aiaudit/dl-training/gpu-node-01/", "aiaudit/dl-training/gpu-node-02/",
                   "aiaudit/dl-training/dl-base:2026.01/"}
    fps = {json.dumps(render(r)["runs"][0]["results"][0]["partialFingerprints"])
           for r in (run, other, image)}
    assert len(fps) == 3


def test_offline_root_is_the_uri_base() -> None:
    run = replace(empty_run(), host=replace(empty_run().host, root="/mnt/my image"))
    doc = render(run)
    validate(doc)
    assert doc["runs"][0]["originalUriBaseIds"]["ROOT"]["uri"] == "file:///mnt/my%20image/"


def test_every_result_has_a_relative_physical_location() -> None:
    """GitHub's ingestion rules (GH1001, GH1005): each result has a physical location
    with a relative URI; one without rejects the whole upload."""
    run = mixed_run()
    f = run.findings[1]
    bare = replace(f, result=replace(f.result, evidence=(), remediation=None,
                                     subject="nvidia"))
    cmd = replace(bare, rule_id="GPU-X", result=replace(
        bare.result, evidence=(Evidence.command("/usr/bin/nvidia-smi -q", "Disabled"),)))
    doc = render(replace(run, findings=(*run.findings, bare, cmd)))
    validate(doc)
    uris = []
    for r in doc["runs"][0]["results"]:
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri and not uri.startswith("/") and ":" not in uri.split("/")[0]
        uris.append(uri)
    assert {"aiaudit/rules/SYSCTL-VM-MAX-MAP-COUNT", "usr/bin/nvidia-smi"} <= set(uris)


def test_live_scan_of_this_host_validates() -> None:
    doc = render(scan_root("/", live=True, reraise=False))
    validate(doc)
    for r in doc["runs"][0]["results"]:
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
