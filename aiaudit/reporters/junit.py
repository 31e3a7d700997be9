"""``junit`` reporter: JUnit XML (Surefire ``junit-10.xsd``) for Jenkins, GitLab and friends.

One ``testsuite`` per run, named ``aiaudit.<ruleset>.<name>``; each result is a
``testcase`` with ``classname`` ``aiaudit.<ruleset>.<name>`` and name ``RULE-ID[subject]``.
The name is the image *name* for an offline scan of a golden image and the hostname
otherwise (:func:`aiaudit.core.identity.scan_name`): the same for every build of an image (its
version and build are suite properties), and distinct for two hosts built from one image,
so CI test history follows each host and image.  Subjects carry no line numbers, so a moved
line does not rename a test.  ``time`` is the rule's duration, shared evenly by the rule's
results (a rule that yields one result per device gives each its part), so the cases add
up to the time spent in checks.  A failure carries the message and the fix in
its body; skip and error results map to ``<skipped>`` and ``<error>``; a waived failure is
``<skipped>`` with the waiver's reason.  Built with ``junit-xml``; characters that XML 1.0
forbids (NUL and other C0 controls from hostile config files, lone surrogates, U+FFFE) are
escaped as ``\\xNN`` before they reach the document, which therefore always parses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

from typing import Any, Mapping

from aiaudit.api import ReporterSpec, RunResult, hookimpl
from aiaudit.core.escape import xml_safe
from aiaudit.core.model import Finding, Status, sorted_findings
from aiaudit.reporters._common import host_label, remediation_text, safe_id

# Attributes that junit-xml writes but junit-10.xsd does not declare.
_UNDECLARED = ("disabled", "assertions", "status", "class", "file", "line", "log", "url")


def classname(run: RunResult) -> str:
    """``aiaudit.<ruleset>.<host>`` (dots in the host name become ``_``)."""
    return ".".join(("aiaudit", safe_id(run.ruleset).replace(".", "_"),
                     safe_id(host_label(run)).replace(".", "_")))


def _body(f: Finding) -> str:
    r = f.result
    lines = [r.message]
    if r.aspect:
        lines.append(f"aspect: {r.aspect.value}")
    # a value the check could not determine is left out, never printed as "None"
    if r.expected is not None:
        lines.append(f"expected: {r.expected}")
    if r.actual is not None:
        lines.append(f"actual: {r.actual}")
    for e in r.evidence:
        val = f" = {e.value}" if e.value is not None else ""
        lines.append(f"evidence: {e.source}{val}")
    if f.waiver is not None:
        w = f.waiver
        lines.append(f"waived: {w.reason} (owner {w.owner}, expires {w.expires})")
    fix = remediation_text(f)
    if fix and r.status is Status.FAIL:
        lines += ["", "fix: " + fix]
    return "\n".join(lines)


def _one_line(text: str) -> str:
    """An attribute value: XML-safe and on one line (parsers fold line feeds in
    attributes to spaces anyway)."""
    return " ".join(xml_safe(text).split())


def case_times(run: RunResult) -> dict[str, float]:
    """Seconds per testcase of each rule: its duration over its number of results."""
    n: dict[str, int] = {}
    for f in run.findings:
        n[f.rule_id] = n.get(f.rule_id, 0) + 1
    return {rid: run.rule_durations.get(rid, 0.0) / k for rid, k in n.items()}


def _case(run: RunResult, f: Finding, time: float) -> Any:
    from junit_xml import TestCase  # type: ignore[import-untyped]  # ships no types

    r = f.result
    name = xml_safe(f"{f.rule_id}[{r.subject}]")
    case = TestCase(name, classname=xml_safe(classname(run)), elapsed_sec=time)
    body = xml_safe(_body(f))
    head = _one_line(f"[{f.severity.value}] {f.title}: {r.message}")
    if f.status is Status.FAIL:
        case.add_failure_info(message=head, output=body, failure_type=f.severity.value)
    elif f.status is Status.ERROR:
        case.add_error_info(message=_one_line(r.message), output=body, error_type="error")
    elif f.status is Status.SKIP:
        case.add_skipped_info(message=_one_line(r.message), output=body)
    elif f.status is Status.WAIVED:
        assert f.waiver is not None
        case.add_skipped_info(message=_one_line(f"waived: {f.waiver.reason}"), output=body)
    else:
        case.stdout = body
    return case


def build(run: RunResult) -> ET.Element:
    import xml.etree.ElementTree as ET

    """The ``<testsuites>`` element of the report."""
    from junit_xml import TestSuite

    h = run.host
    props = {"ruleset": run.ruleset, "ruleset_version": run.ruleset_version,
             "run_id": run.run_id, "mode": h.mode, "root": h.root,
             "fail_on": run.fail_on.value, "tool_version": run.tool_version}
    for key in ("machine_id", "product_uuid", "image_id", "image_name", "image_version",
                "image_build", "os_name", "kernel"):
        value = getattr(h, key)
        if value:
            props[key] = value
    times = case_times(run)
    suite = TestSuite(
        xml_safe(classname(run)),
        [_case(run, f, times[f.rule_id]) for f in sorted_findings(run)],
        hostname=xml_safe(h.hostname),
        id=xml_safe(run.run_id),
        timestamp=xml_safe(run.started.removesuffix("Z")),
        properties={k: xml_safe(v) for k, v in props.items()},
        stderr=xml_safe("\n".join(run.notices)) if run.notices else None,
    )
    el = suite.build_xml_doc()
    el.set("time", f"{run.duration_s:.3f}")  # SUREFIRE_TIME: at most 3 decimals
    for node in el.iter():
        for attr in _UNDECLARED:
            node.attrib.pop(attr, None)
        if node.tag == "testcase":
            node.set("time", f"{float(node.get('time') or 0):.3f}")
    root = ET.Element("testsuites", {
        "name": xml_safe(f"aiaudit {run.ruleset}"),
        "tests": el.get("tests", "0"), "failures": el.get("failures", "0"),
        "errors": el.get("errors", "0"), "time": el.get("time", "0"),
    })
    root.append(el)
    return root


def render(run: RunResult, options: Mapping[str, Any]) -> str:
    """The run as a JUnit XML document."""
    import xml.dom.minidom
    import xml.etree.ElementTree as ET

    raw = ET.tostring(build(run), encoding="utf-8")
    pretty = xml.dom.minidom.parseString(raw).toprettyxml(indent="  ", encoding="utf-8")
    return pretty.decode("utf-8")


@hookimpl
def aiaudit_register_reporters() -> list[ReporterSpec]:
    """Register the ``junit`` format."""
    return [ReporterSpec("junit", render, "JUnit XML (Jenkins, GitLab; junit-10.xsd)", "xml")]
