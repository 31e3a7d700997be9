"""The ``nfd`` feature file against node-feature-discovery's rules: every line a name that
is a Kubernetes qualified name and a valid label value (nfd-worker drops any other line,
source/local and pkg/nfd-worker of kubernetes-sigs/node-feature-discovery), the
``# +expiry-time`` directive in RFC 3339, ``ready`` as the exit code decides."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.model import Finding, Result, Severity, Status
from aiaudit.reporters.nfd import label_value, render
from tests.reporters.samples import mixed_run

# k8s.io/apimachinery/pkg/util/validation: IsQualifiedName and IsValidLabelValue
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def check_feature_file(text: str) -> dict[str, str]:
    """Parse ``text`` as nfd-worker does and assert every label is valid."""
    labels: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            if line.startswith("# +"):
                key, _, value = line[3:].partition("=")
                assert key == "expiry-time"
                datetime.fromisoformat(value.replace("Z", "+00:00"))
            continue
        key, _, value = line.partition("=")
        prefix, _, name = key.rpartition("/")
        assert len(prefix) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(prefix), key
        assert prefix.endswith(".feature.node.kubernetes.io"), key
        assert len(name) <= 63 and _NAME.fullmatch(name), key
        assert len(value) <= 63 and _VALUE.fullmatch(value), (key, value)
        labels[name] = value
    return labels


def _facts(facts: dict[str, object]) -> Finding:
    return Finding("NODE-FACTS", "inventory.facts", Severity.INFO, "facts",
                   Result(Status.PASS, "facts", "recorded", data={"facts": facts}))


def test_mixed_run_labels() -> None:
    run = mixed_run()
    facts = {"gpu.nvidia.count": 8, "gpu.nvidia.model": {"a": "NVIDIA H100 80GB HBM3"},
             "gpu.pcie.width": {"a": 16, "b": 8},
             "hca.port_rate": {"m/1": "400 Gb/sec (4X NDR)", "n/1": "200 Gb/sec (4X HDR)"}}
    run = replace(run, findings=(*run.findings, _facts(facts)))
    labels = check_feature_file(render(run, {}))
    assert labels["ready"] == "false"
    assert labels["failures.high"] == str(sum(
        1 for f in run.findings if f.status is Status.FAIL and f.severity is Severity.HIGH))
    assert labels["gpu.nvidia.count"] == "8"
    assert labels["gpu.nvidia.model"] == "NVIDIA-H100-80GB-HBM3"
    assert labels["gpu.pcie.width"] == "8"  # the lowest link is the one that matters
    assert labels["hca.port_rate"] == "200-Gb-sec-4X-HDR"


def test_ready_follows_fail_on() -> None:
    run = mixed_run()
    fails = {f.severity for f in run.findings if f.status is Status.FAIL}
    above = max(fails, key=lambda s: s.rank)
    assert check_feature_file(render(replace(run, fail_on=above), {}))["ready"] == "false"
    if above is not Severity.CRITICAL:
        top = replace(run, fail_on=Severity.CRITICAL)
        assert check_feature_file(render(top, {}))["ready"] == "true"


@given(st.text(max_size=200))
def test_any_value_becomes_a_valid_label_value(text: str) -> None:
    v = label_value(text)
    assert len(v) <= 63 and _VALUE.fullmatch(v)


@given(st.text(max_size=80), st.dictionaries(
    st.sampled_from(["gpu.nvidia.model", "cpu.model", "kernel.release", "gpu.pcie.width"]),
    st.one_of(st.text(max_size=100), st.integers(), st.dictionaries(
        st.text(max_size=5), st.text(max_size=30), max_size=3)), max_size=4))
def test_hostile_host_values_never_make_an_invalid_line(hostname: str,
                                                       facts: dict[str, object]) -> None:
    run = mixed_run()
    run = replace(run, host=replace(run.host, hostname=hostname),
                  findings=(*run.findings, _facts(facts)))
    text = render(run, {})
    assert text.count("\n") == len(text.splitlines())  # no line feed smuggled in
    check_feature_file(text)
