"""SARIF reporter: schema validity (OASIS 2.1.0 schema, vendored) and what GitHub code
scanning needs (rules metadata, locations, fingerprints, categories, suppressions)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from aiaudit.core.model import Evidence
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
    doc = render(mixed_run())
    driver = doc["runs"][0]["tool"]["driver"]
    assert driver["informationUri"].startswith("https://") and driver["fullName"]
    rules = driver["rules"]
    assert [r["id"] for r in rules] == [r.id for r in mixed_run().rules]
    by_id = {r["id"]: r for r in rules}
    for r in rules:
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"]
        assert r["help"]["text"] and r["help"]["markdown"]
        assert "aiaudit" in r["properties"]["tags"]
        # one severity scale per rule: the security score only on security rules
        sev = r["properties"].get("security-severity")
        assert (sev is not None) == ("security" in r["properties"]["tags"]), r["id"]
        if sev is not None:
            assert isinstance(sev, str) and 0.0 <= float(sev) <= 10.0
    assert float(by_id["SSHD-PERMIT-ROOT-LOGIN"]["properties"]["security-severity"]) > 9.0
    assert by_id["BLOCK-NVME-SCHEDULER"]["defaultConfiguration"]["level"] == "error"
    assert by_id["SYSCTL-VM-SWAPPINESS"]["defaultConfiguration"]["level"] == "warning"
    assert by_id["CPU-GOVERNOR"]["defaultConfiguration"]["level"] == "note"
    assert "Set kernel.numa_balancing = 0." in \
        by_id["SYSCTL-KERNEL-NUMA-BALANCING"]["help"]["markdown"]


def test_rule_help_is_the_same_for_every_host() -> None:
    """GitHub keeps one help text per rule: nothing of this host's failures is in it."""
    run = mixed_run()
    rules = render(run)["runs"][0]["tool"]["driver"]["rules"]
    none = render(replace(run, findings=()))["runs"][0]["tool"]["driver"]["rules"]
    assert rules == none
    text = json.dumps(rules)
    assert "/sys/block/nvme0n1" not in text and "on this host" not in text
    # the host's fix is in the result message instead
    res = {r["ruleId"]: r for r in render(run)["runs"][0]["results"]}
    assert "echo none > /sys/block/nvme0n1/queue/scheduler" in \
        res["BLOCK-NVME-SCHEDULER"]["message"]["text"]


def test_results_only_for_failures_at_physical_locations() -> None:
    run = render(mixed_run())["runs"][0]
    res = {r["ruleId"]: r for r in run["results"]}
    assert set(res) == {"SYSCTL-VM-MAX-MAP-COUNT", "BLOCK-NVME-SCHEDULER"}
    rules = run["tool"]["driver"]["rules"]
    for r in run["results"]:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["kind"] == "fail"
        # the finding itself, not the rule id (sarif-tools cuts a rule-id prefix off)
        assert not r["message"]["text"].startswith(r["ruleId"])
    # the deciding file, relative to the scanned root, with its line
    loc = res["SYSCTL-VM-MAX-MAP-COUNT"]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "etc/sysctl.d/60-x.conf", "uriBaseId": "ROOT"}
    assert loc["region"] == {"startLine": 2}
    assert res["SYSCTL-VM-MAX-MAP-COUNT"]["level"] == "warning"
    # runtime-only state: the /sys path (one value on one line)
    loc = res["BLOCK-NVME-SCHEDULER"]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "sys/block/nvme0n1/queue/scheduler"
    assert loc["region"] == {"startLine": 1}
    assert res["BLOCK-NVME-SCHEDULER"]["level"] == "error"
    assert run["originalUriBaseIds"]["ROOT"]["uri"] == "file:///"
    # the fix is in the alert text
    assert "sysctl -w vm.max_map_count='262144'" in \
        res["SYSCTL-VM-MAX-MAP-COUNT"]["message"]["text"]


def test_fix_files_are_fixes_not_locations() -> None:
    """Only a default decided: the location is the host's os-release, never the drop-in
    a fix would create; that file is a ``fixes[]`` entry."""
    run = mixed_run()
    f = next(x for x in run.findings if x.rule_id == "SYSCTL-KERNEL-NUMA-BALANCING")
    unwaived = replace(f, waiver=None)
    host = replace(run.host, os_release_path="/etc/os-release")
    doc = render(replace(run, host=host, findings=(unwaived,)))
    validate(doc)
    r = doc["runs"][0]["results"][0]
    loc = r["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "etc/os-release"
    change = r["fixes"][0]["artifactChanges"][0]
    assert change["artifactLocation"]["uri"] == "etc/sysctl.d/99-zz-aiaudit.conf"
    assert "kernel.numa_balancing" in change["replacements"][0]["insertedContent"]["text"]


def test_live_line_is_a_region_not_part_of_the_uri() -> None:
    run = mixed_run()
    f = run.findings[1]
    sock = replace(f, result=replace(f.result, evidence=(
        Evidence.runtime("/proc/net/tcp:2", "0.0.0.0:6006"),
        Evidence.runtime("/proc/4242/fd")), remediation=None))
    r = render(replace(run, findings=(sock,)))["runs"][0]["results"][0]
    loc = r["locations"][0]["physicalLocation"]
    assert loc == {"artifactLocation": {"uri": "proc/net/tcp", "uriBaseId": "ROOT"},
                   "region": {"startLine": 2}}
    assert r["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "proc/4242/fd"


def test_location_is_the_line_the_message_names() -> None:
    """Context evidence first (``UsePAM yes`` made pam_limits apply), the deciding
    limits.conf line named in the message: the location is the limits.conf line."""
    run = mixed_run()
    f = run.findings[1]
    lim = replace(f, result=replace(
        f.result, message="soft memlock of alice via sshd is 64 KiB (from "
                          "etc/security/limits.conf:12), expected unlimited.",
        evidence=(Evidence.file("/etc/ssh/sshd_config", 3, "UsePAM yes"),
                  Evidence.file("/etc/pam.d/sshd", 9, "session required pam_limits.so"),
                  Evidence.file("/etc/security/limits.conf", 12, "* soft memlock 64")),
        remediation=None))
    r = render(replace(run, findings=(lim,)))["runs"][0]["results"][0]
    loc = r["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "etc/security/limits.conf"
    assert loc["region"] == {"startLine": 12}
    assert [x["physicalLocation"]["artifactLocation"]["uri"] for x in r["relatedLocations"]] \
        == ["etc/ssh/sshd_config", "etc/pam.d/sshd"]
    # a default decided (named in the message): no context line is the location
    dflt = replace(f, result=replace(
        f.result, message="soft nofile of alice via sshd is 1024 (from systemd default "
                          "DefaultLimitNOFILE), expected >= 65536.",
        evidence=(Evidence.file("/etc/ssh/sshd_config", 3, "UsePAM yes"),
                  Evidence.default("systemd default DefaultLimitNOFILE", "1024")),
        remediation=None))
    host = replace(run.host, os_release_path="/usr/lib/os-release")
    r = render(replace(run, host=host, findings=(dflt,)))["runs"][0]["results"][0]
    assert r["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "usr/lib/os-release", "uriBaseId": "ROOT"}}
    assert [x["physicalLocation"]["artifactLocation"]["uri"] for x in r["relatedLocations"]] \
        == ["etc/ssh/sshd_config"]


def test_waived_failure_is_a_notification_not_an_alert() -> None:
    """GitHub code scanning ignores ``suppressions`` (the alert stays open) and so does
    sarif-tools: a waived failure is left out of the results, which closes its alert,
    and reported as a notification with the waiver."""
    doc = render(mixed_run())["runs"][0]
    assert "SYSCTL-KERNEL-NUMA-BALANCING" not in {r["ruleId"] for r in doc["results"]}
    assert not any("suppressions" in r for r in doc["results"])
    notes = doc["invocations"][0]["toolExecutionNotifications"]
    waived = next(n for n in notes
                  if n.get("associatedRule", {}).get("id") == "SYSCTL-KERNEL-NUMA-BALANCING")
    assert waived["descriptor"]["id"] == "aiaudit/waived"
    assert waived["properties"]["waiver"] == {
        "reason": "vendor tuning for this GPU box", "owner": "ops-team",
        "expires": "2099-12-31", "source": "waivers.yaml:3"}
    assert doc["properties"]["summary"]["waived"] == 1


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
    image = replace(image, host=replace(image.host, image_name="dl-base", machine_id=None))
    ids = {render(r)["runs"][0]["automationDetails"]["id"] for r in (run, other, image)}
    assert ids == {"aiaudit/dl-training/gpu-node-01/", "aiaudit/dl-training/gpu-node-02/",
                   "aiaudit/dl-training/dl-base/"}
    fps = {json.dumps(render(r)["runs"][0]["results"][0]["partialFingerprints"])
           for r in (run, other, image)}
    assert len(fps) == 3


def test_image_version_and_build_are_properties_not_identity() -> None:
    run = mixed_run()
    builds = []
    for version, build in (("2026.01", "17"), ("2026.02", "18")):
        host = replace(run.host, mode="offline", machine_id=None, image_name="dl-base",
                       image_version=version, image_build=build,
                       image_id=f"dl-base:{version} build {build}")
        builds.append(render(replace(run, host=host))["runs"][0])
    a, b = builds
    assert a["automationDetails"]["id"] == b["automationDetails"]["id"] == \
        "aiaudit/dl-training/dl-base/"
    assert [r["partialFingerprints"] for r in a["results"]] == \
        [r["partialFingerprints"] for r in b["results"]]
    assert b["properties"]["host"]["image_version"] == "2026.02"
    assert b["properties"]["host"]["image_build"] == "18"


def test_sarif_category_option() -> None:
    for given in ("golden/gpu-node/", "golden/gpu-node"):
        doc = json.loads(sarif.render(mixed_run(), {"sarif_category": given}))
        assert doc["runs"][0]["automationDetails"]["id"] == "golden/gpu-node/"


def test_one_rule_two_results_for_one_subject_get_two_fingerprints() -> None:
    run = mixed_run()
    f = run.findings[1]
    doc = render(replace(run, findings=(f, f)))
    fps = [r["partialFingerprints"]["aiaudit/v1"] for r in doc["runs"][0]["results"]]
    assert len(set(fps)) == 2


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
    assert {"usr/bin/nvidia-smi"} <= set(uris)
    assert not any(u.startswith("aiaudit/") for u in uris)   # no pseudo paths


def test_live_scan_of_this_host_validates() -> None:
    doc = render(scan_root("/", live=True, reraise=False))
    validate(doc)
    for r in doc["runs"][0]["results"]:
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
