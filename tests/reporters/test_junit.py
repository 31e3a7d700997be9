"""JUnit reporter: valid against Surefire's junit-10.xsd (vendored), names and mapping of
statuses, and documents that never break on characters XML forbids."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.core.model import Evidence
from aiaudit.reporters import junit
from tests.helpers import FIXTURES
from tests.reporters.samples import SAMPLES, mixed_run
from tests.reporters.scans import FIXTURE_ROOT, as_image, scan_root

etree = pytest.importorskip("lxml.etree")
XSD = etree.XMLSchema(etree.parse(str(FIXTURES / "reference" / "junit-10.xsd")))

FORBIDDEN = "".join(map(chr, [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])) + \
    "\ud800\udcff\ufffe\uffff"


def parse(text: str):
    """Parse and validate; returns the root element."""
    doc = etree.fromstring(text.encode("utf-8"))
    XSD.assertValid(doc)
    return doc


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_samples_validate(sample: str) -> None:
    parse(junit.render(SAMPLES[sample](), {}))


def test_real_scan_validates() -> None:
    doc = parse(junit.render(scan_root(FIXTURE_ROOT), {}))
    assert int(doc.get("failures")) >= 1


def test_xsd_rejects_what_junit_xml_adds_unfiltered() -> None:
    """The schema check can fail: junit-xml's own ``disabled`` attribute is not in the
    XSD (the reporter removes it)."""
    from junit_xml import TestCase, TestSuite, to_xml_report_string

    raw = to_xml_report_string([TestSuite("s", [TestCase("t")])])
    assert not XSD.validate(etree.fromstring(raw.encode()))


def test_names_and_statuses() -> None:
    doc = parse(junit.render(mixed_run(), {}))
    suite = doc.find("testsuite")
    assert suite.get("name") == "aiaudit.dl-training.gpu-node-01"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"),
            suite.get("skipped")) == ("6", "2", "1", "2")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert {c.get("classname") for c in cases.values()} == {"aiaudit.dl-training.gpu-node-01"}
    fail = cases["SYSCTL-VM-MAX-MAP-COUNT[vm.max_map_count]"].find("failure")
    assert "vm.max_map_count is 65530" in fail.get("message")
    assert "sysctl -w vm.max_map_count='262144'" in fail.text
    assert "/etc/sysctl.d/99-zz-aiaudit.conf" in fail.text
    assert cases['BLOCK-NVME-SCHEDULER[nvme0n1 "fast\\disk"]'].find("failure") is not None
    assert cases["CPU-GOVERNOR[cpu]"].find("skipped").get("message").startswith("no cpufreq")
    err = cases["SSHD-PERMIT-ROOT-LOGIN[sshd]"].find("error")
    assert "unterminated quote" in err.get("message")
    waived = cases["SYSCTL-KERNEL-NUMA-BALANCING[kernel.numa_balancing]"].find("skipped")
    assert waived.get("message") == "waived: vendor tuning for this GPU box"
    passed = cases["SYSCTL-VM-SWAPPINESS[vm.swappiness]"]
    assert passed.find("failure") is None and passed.find("skipped") is None


def test_classname_separates_images() -> None:
    doc = parse(junit.render(as_image(mixed_run(), "dl-base:2026.01"), {}))
    assert {c.get("classname") for c in doc.iter("testcase")} == \
        {"aiaudit.dl-training.dl-base"}


def test_classname_is_stable_across_builds_and_distinct_per_host() -> None:
    run = mixed_run()

    def names(r) -> set[tuple[str, str]]:
        doc = parse(junit.render(r, {}))
        return {(c.get("classname"), c.get("name")) for c in doc.iter("testcase")}

    assert names(as_image(run, "dl-base:2026.01")) == names(as_image(run, "dl-base:2026.02"))
    a = replace(run, host=replace(run.host, hostname="gpu-a", image_id="dl-base:1",
                                  image_name="dl-base"))
    b = replace(a, host=replace(a.host, hostname="gpu-b"))
    assert {c for c, _ in names(a)} == {"aiaudit.dl-training.gpu-a"}
    assert {c for c, _ in names(b)} == {"aiaudit.dl-training.gpu-b"}


def test_testcase_time_is_the_rules_duration() -> None:
    run = mixed_run()
    rids = [f.rule_id for f in run.findings]
    durations = {rid: 0.25 * (i + 1) for i, rid in enumerate(dict.fromkeys(rids))}
    doc = parse(junit.render(replace(run, rule_durations=durations), {}))
    got: dict[str, float] = {}
    for c in doc.iter("testcase"):
        rid = c.get("name").split("[", 1)[0]
        got[rid] = got.get(rid, 0.0) + float(c.get("time"))
    for rid, seconds in durations.items():
        assert got[rid] == pytest.approx(seconds, abs=0.002 * rids.count(rid))


def test_real_scan_records_rule_durations() -> None:
    run = scan_root(FIXTURE_ROOT)
    assert set(run.rule_durations) == {r.id for r in run.rules}
    assert all(0 <= t < 30 for t in run.rule_durations.values())
    doc = parse(junit.render(run, {}))
    assert all(c.get("time") is not None for c in doc.iter("testcase"))


def _hostile(text: str):
    run = mixed_run()
    f = run.findings[1]
    r = replace(f.result, subject="key" + text, message="bad " + text,
                evidence=(Evidence.file("/etc/sysctl.d/x" + text + ".conf", 1, text),),
                expected=text, actual=text)
    return replace(run, findings=(replace(f, result=r), *run.findings[2:]),
                   notices=(text,), host=replace(run.host, hostname="h" + text))


def test_forbidden_characters_are_escaped() -> None:
    text = junit.render(_hostile(FORBIDDEN), {})
    doc = parse(text)
    fail = next(doc.iter("failure"))
    assert "\\x00\\x01" in fail.text and "\\x1f" in fail.text
    assert "\\ud800\\udcff\\ufffe\\uffff" in fail.text
    assert "\t" not in FORBIDDEN and text.encode("utf-8")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_any_text_gives_a_valid_document(text: str) -> None:
    parse(junit.render(_hostile(text), {}))


def test_live_scan_of_this_host_validates() -> None:
    parse(junit.render(scan_root("/", live=True, reraise=False), {}))
