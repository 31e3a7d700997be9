"""The reports as their real consumers read them.

- SARIF: Microsoft's SARIF multitool (``validate`` with the SARIF and GitHub ingestion rule
  kinds) and sarif-tools' ``summary``;
- JUnit: junitparser, whose counts must equal the JSON report's summary;
- Prometheus: ``promtool check metrics`` and a real node_exporter textfile collector that
  reads two aiaudit files (two rulesets) from one directory;
- identity: a rescan after a new image build and after a comment line inserted above a
  ``Match`` block keeps the SARIF category, the fingerprints, the JUnit names and the metric
  labels.

Every tool is installed by ``.ci/run``; outside CI a missing one skips its test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from aiaudit.reporters import json as json_reporter
from aiaudit.reporters import junit, prometheus, sarif
from aiaudit.reporters.sarif import deciding_evidence
from tests.helpers import ROOTS, cli
from tests.modes_support import need, need_program
from tests.reporters.scans import scan_root

CASES = {
    # Match blocks in sshd_config, compiled-in defaults, sysctl defaults
    "sshd-match-override": False,
    # limits: the deciding line beside context lines
    "limits-slurm-except-memlock": False,
    # a live listener: /proc/net/tcp with a line
    "net-tensorboard-exposed": True,
    # firewalld zone files, several evidence lines
    "fw-firewalld-etc-zone-overrides": False,
    # whole files (kernel modules, libraries) decide
    "gpu-forward-compat": False,
    "sysctl-etc-overrides-vendor": False,
}
"""Fixture roots scanned for the consumers (name: live)."""

MULTITOOL_PACKAGE = "@microsoft/sarif-multitool-linux/Sarif.Multitool"


@pytest.fixture(scope="module")
def runs():
    """(name, RunResult) for every case."""
    return [(name, scan_root(ROOTS / name / "root", live=live, reraise=False))
            for name, live in CASES.items()]


# --------------------------------------------------------------------- SARIF multitool
def multitool() -> str:
    """The multitool binary that ``.ci/run`` installs under ``npm`` in its venv (found from
    the running interpreter's ``sys.prefix``, never a hard-coded ``.venv``)."""
    path = Path(os.environ.get("AIAUDIT_SARIF_MULTITOOL")
                or Path(sys.prefix) / "npm" / "node_modules" / MULTITOOL_PACKAGE)
    need(path.is_file(), f"the SARIF multitool ({path}; npm @microsoft/sarif-multitool)")
    assert os.access(path, os.X_OK), f"{path} is not executable"
    return str(path)


def _formatted(result: dict, rules: dict[str, dict]) -> str:
    msg = result["message"]
    text = msg.get("text") or rules[result["ruleId"]]["messageStrings"][msg["id"]]["text"]
    for i, arg in enumerate(msg.get("arguments", [])):
        text = text.replace("{" + str(i) + "}", arg)
    return text


MULTITOOL_CONFIG = """<?xml version="1.0" encoding="utf-8" ?>
<Properties>
  <Properties Key="SARIF2006.UrisShouldBeReachable.Options">
    <Property Key="RuleEnabled" Value="Disabled" />
  </Properties>
</Properties>
"""
"""SARIF2006 (a note: help and schema URIs answer an HTTP GET) needs the network, which
tests do not have; every other rule of both kinds runs."""


def validate_with_multitool(paths: list[Path], tmp: Path) -> dict[str, list[tuple[str, str,
                                                                                  str]]]:
    """For each file name: (rule id, level, message) of every error and warning the
    multitool reports (one invocation for all files: it starts slowly)."""
    out = tmp / "validation.sarif"
    config = tmp / "multitool.xml"
    config.write_text(MULTITOOL_CONFIG)
    proc = subprocess.run(
        [multitool(), "validate", "--config", str(config), "--rule-kind", "Sarif;Ghas",
         "--level", "Error;Warning", "--output", str(out), *map(str, paths)],
        capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(paths)} files scanned" in proc.stdout, proc.stdout
    log = json.loads(out.read_text(encoding="utf-8-sig"))
    run = log["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"].get("rules", [])}
    found: dict[str, list[tuple[str, str, str]]] = {p.name: [] for p in paths}
    for r in run.get("results", []):
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        found[uri.rsplit("/", 1)[-1]].append(
            (r["ruleId"], r.get("level", "warning"), _formatted(r, rules)))
    return found


_RESULT_PATH = re.compile(r"runs\[0\]\.results\[(\d+)\]\.locations\[0\]\.physicalLocation")


def _has_line(f) -> bool:
    """Whether the result's deciding evidence has a line (so the location gets a region)."""
    ev = deciding_evidence(f)
    if ev is None:
        return False
    path = ev.path or ""
    return ev.line is not None or bool(re.search(r":\d+$", path)) or (
        ev.kind == "runtime" and path.startswith(("/proc/sys/", "/sys/")))


@pytest.mark.slow
def test_sarif_multitool_finds_no_problem(runs, tmp_path: Path) -> None:
    """No error and no warning, but one justified kind: SARIF2017 (a region on every
    location) for findings that no line decided - a whole file (a kernel module, a library,
    a unit that exists) or the whole host (a compiled-in default decided: the location is
    the root's os-release).  Inventing ``startLine: 1`` there would point at a line that did
    not decide; every result whose deciding evidence has a line does get a region."""
    docs: dict[str, list[dict]] = {}
    paths = []
    for name, run in runs:
        path = tmp_path / f"{name}.sarif"
        path.write_text(sarif.render(run, {}), encoding="utf-8")
        paths.append(path)
        results = json.loads(path.read_text())["runs"][0]["results"]
        docs[path.name] = results
        failed = sorted_failures(run)
        assert results and len(failed) == len(results), name
        for f, r in zip(failed, results, strict=True):
            assert ("region" in r["locations"][0]["physicalLocation"]) == _has_line(f), \
                (name, r["ruleId"])
    for name, problems in validate_with_multitool(paths, tmp_path).items():
        for rule, level, text in problems:
            m = _RESULT_PATH.search(text)
            justified = rule == "SARIF2017" and level == "warning" and m is not None and \
                "region" not in docs[name][int(m.group(1))]["locations"][0]["physicalLocation"]
            assert justified, f"{name}: {rule} {level}: {text}"


@pytest.mark.slow
def test_multitool_check_can_fail(tmp_path: Path) -> None:
    """The GitHub rules flag what GitHub rejects: an absolute URI, a result without
    location - so the test above would see it."""
    doc = json.loads(sarif.render(scan_root(ROOTS / "sshd-match-override" / "root"), {}))
    res = doc["runs"][0]["results"]
    res[0]["locations"][0]["physicalLocation"]["artifactLocation"] = {"uri": "/etc/passwd"}
    del res[1]["locations"]
    path = tmp_path / "broken.sarif"
    path.write_text(json.dumps(doc))
    found = {rule for rule, _, _ in validate_with_multitool([path], tmp_path)["broken.sarif"]}
    assert found & {"GH1001", "GH1005", "GH1015", "GH1017"}, found


def sorted_failures(run) -> list:
    from aiaudit.core.model import Status, sorted_findings

    return [f for f in sorted_findings(run) if f.status is Status.FAIL]


# --------------------------------------------------------------------- sarif-tools
def sarif_tools() -> str:
    exe = Path(sys.executable).parent / "sarif"
    need(exe.is_file(), "sarif-tools (pip sarif-tools)")
    return str(exe)


_SUMMARY_LINE = re.compile(r"^ - (\S+) (.*): (\d+)$")


def test_sarif_tools_summary_shows_the_finding(runs, tmp_path: Path) -> None:
    """``sarif summary`` over every case (one directory, one process) shows each rule
    with the beginning of its finding, never ``[`` (what a message starting with the rule
    id became)."""
    tool = sarif_tools()
    firsts: dict[str, list[str]] = {}
    for name, run in runs:
        path = tmp_path / f"{name}.sarif"
        path.write_text(sarif.render(run, {}), encoding="utf-8")
        for r in json.loads(path.read_text())["runs"][0]["results"]:
            firsts.setdefault(r["ruleId"], []).append(r["message"]["text"].splitlines()[0])
    proc = subprocess.run([tool, "summary", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    shown = [m.groups() for ln in proc.stdout.splitlines() if (m := _SUMMARY_LINE.match(ln))]
    assert {rule for rule, _, _ in shown} == set(firsts), proc.stdout
    for rule, desc, _count in shown:
        assert not desc.startswith("["), (rule, desc)
        # sarif-tools groups a rule's results by their common beginning (``ipv ...``)
        prefix = desc.removesuffix(" ...").removesuffix("...")
        assert any(m.startswith(prefix) for m in firsts[rule]), (rule, desc)
        assert prefix or len(set(firsts[rule])) > 1, (rule, desc)


# --------------------------------------------------------------------- junitparser
def test_junitparser_counts_equal_the_json_summary(runs, tmp_path: Path) -> None:
    try:
        import junitparser
    except ImportError:
        need(False, "junitparser (pip junitparser)")
    for name, run in runs:
        path = tmp_path / f"{name}.xml"
        path.write_text(junit.render(run, {}), encoding="utf-8")
        summary = json.loads(json_reporter.render(run, {}))["summary"]
        by = summary["by_status"]
        xml = junitparser.JUnitXml.fromfile(str(path))
        suites = list(xml) if isinstance(xml, junitparser.JUnitXml) else [xml]
        cases = [c for s in suites for c in s]
        kinds = {"failure": 0, "error": 0, "skipped": 0, "passed": 0}
        for c in cases:
            res = c.result
            if not res:
                kinds["passed"] += 1
            elif isinstance(res[0], junitparser.Failure):
                kinds["failure"] += 1
            elif isinstance(res[0], junitparser.Error):
                kinds["error"] += 1
            elif isinstance(res[0], junitparser.Skipped):
                kinds["skipped"] += 1
        assert len(cases) == summary["total"], name
        assert kinds == {"failure": by["fail"], "error": by["error"],
                         "skipped": by["skip"] + by["waived"], "passed": by["pass"]}, name
        s = suites[0]
        assert (s.tests, s.failures, s.errors, s.skipped) == (
            summary["total"], by["fail"], by["error"], by["skip"] + by["waived"]), name
        assert all(c.time is not None and c.time >= 0 for c in cases)


# --------------------------------------------------------------------- Prometheus
def test_promtool_check_metrics(runs, tmp_path: Path) -> None:
    need_program("promtool")
    for name, run in runs:
        for rs in ("dl-training", "slurm-preflight"):
            from dataclasses import replace

            text = prometheus.render(replace(run, ruleset=rs), {})
            proc = subprocess.run(["promtool", "check", "metrics"], input=text,
                                  capture_output=True, text=True, timeout=60)
            assert proc.returncode == 0 and not (proc.stdout + proc.stderr).strip(), \
                (name, proc.stdout + proc.stderr)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_textfiles(directory: Path, log: Path) -> tuple[str, str]:
    """Start node_exporter with only the textfile collector on 127.0.0.1, scrape it once,
    stop it; returns (metrics, its log)."""
    exe = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    need(exe is not None, "prometheus-node-exporter")
    assert exe is not None
    port = _free_port()
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [exe, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
             "--collector.textfile", f"--collector.textfile.directory={directory}"],
            stdout=fh, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                            timeout=5) as resp:
                    body = resp.read().decode()
                break
            except OSError:
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < end, "node_exporter did not answer in 20 s"
                time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return body, log.read_text()


@pytest.mark.slow
def test_node_exporter_reads_two_aiaudit_files(tmp_path: Path) -> None:
    """The hourly dl-training scan and the prolog's slurm-preflight scan side by side in
    one textfile directory: every series of both arrives, none is a duplicate."""
    root = ROOTS / "sshd-match-override" / "root"
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    hourly = scan_root(root)
    prolog = scan_root(root, ruleset_ref="slurm-preflight")
    (textfiles / "aiaudit.prom").write_text(prometheus.render(hourly, {}))
    (textfiles / "aiaudit-prolog.prom").write_text(prometheus.render(prolog, {}))
    body, log = scrape_textfiles(textfiles, tmp_path / "node_exporter.log")
    assert "error gathering metrics" not in log and "collected before" not in log, log
    assert "node_textfile_scrape_error 0" in body
    got = [ln for ln in body.splitlines() if ln.startswith("aiaudit_result{")]
    assert len(got) == len(hourly.findings) + len(prolog.findings)
    assert {'ruleset="dl-training"', 'ruleset="slurm-preflight"'} <= \
        {m for ln in got for m in re.findall(r'ruleset="[^"]*"', ln)}


@pytest.mark.slow
def test_node_exporter_check_can_fail(tmp_path: Path) -> None:
    """Control: one file twice in the directory is what the old output was (no ruleset
    label) - node_exporter logs the duplicates, the check above would see them."""
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    text = prometheus.render(scan_root(ROOTS / "sshd-match-override" / "root"), {})
    (textfiles / "a.prom").write_text(text)
    (textfiles / "b.prom").write_text(text)
    _, log = scrape_textfiles(textfiles, tmp_path / "node_exporter.log")
    assert "collected before with the same name and label values" in log


# --------------------------------------------------------------------- identity
def _image_root(tmp: Path, version: str, build: str, comment_above_match: bool) -> Path:
    root = tmp / f"img-{version}-{build}-{int(comment_above_match)}"
    shutil.copytree(ROOTS / "sshd-match-override" / "root", root, symlinks=True)
    (root / "etc" / "machine-id").write_text("uninitialized\n")
    (root / "etc" / "os-release").write_text(
        f"ID=debian\nVERSION_ID=12\nIMAGE_ID=gpu-node\nIMAGE_VERSION={version}\n"
        f"BUILD_ID={build}\n")
    if comment_above_match:
        conf = root / "etc" / "ssh" / "sshd_config"
        lines = conf.read_text().splitlines(keepends=True)
        first = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("Match "))
        lines.insert(first, "# a comment added by the next image build\n")
        conf.write_text("".join(lines))
    return root


def _scan_outputs(root: Path, out: Path, *extra: str) -> dict[str, Any]:
    out.mkdir()
    r = cli("scan", "--root", str(root), "--output", f"sarif:{out}/a.sarif",
            "--output", f"junit:{out}/a.xml", "--output", f"prometheus:{out}/a.prom", *extra)
    assert r.code in (0, 1), r.err
    doc = json.loads((out / "a.sarif").read_text())["runs"][0]
    import xml.etree.ElementTree as ET

    cases = ET.parse(out / "a.xml").getroot().iter("testcase")
    series = set()
    for ln in (out / "a.prom").read_text().splitlines():
        if not ln.startswith("#"):
            series.add(ln.rsplit(" ", 1)[0])
    return {
        "category": doc["automationDetails"]["id"],
        "fingerprints": sorted((r["ruleId"], r["partialFingerprints"]["aiaudit/v1"])
                               for r in doc["results"]),
        "regions": {(r["ruleId"], r["properties"]["subject"]):
                    r["locations"][0]["physicalLocation"].get("region", {}).get("startLine")
                    for r in doc["results"]},
        "host": doc["properties"]["host"],
        "junit": sorted((c.get("classname"), c.get("name")) for c in cases),
        "series": series,
    }


def _labels_only(series: set[str]) -> set[str]:
    # the value-free identity of a series; scan_info's root differs between the two roots
    return {re.sub(r',?root="[^"]*"', "", s) for s in series}


def test_identity_survives_a_new_build_and_a_moved_line(tmp_path: Path) -> None:
    a = _scan_outputs(_image_root(tmp_path, "2026.01", "17", False), tmp_path / "a")
    b = _scan_outputs(_image_root(tmp_path, "2026.02", "18", True), tmp_path / "b")
    assert a["category"] == b["category"] == "aiaudit/dl-training/gpu-node/"
    assert a["fingerprints"] == b["fingerprints"]
    assert a["junit"] == b["junit"] and a["junit"]
    assert _labels_only(a["series"]) == _labels_only(b["series"])
    # the version and build are reported, outside the identity
    assert (b["host"]["image_version"], b["host"]["image_build"]) == ("2026.02", "18")
    # the Match results moved one line down: only their location says so
    moved = {k: (a["regions"][k], b["regions"][k]) for k in a["regions"]
             if k[1].startswith("Match ")}
    assert moved and all(new == old + 1 for old, new in moved.values()), moved


def test_sarif_category_option_end_to_end(tmp_path: Path) -> None:
    got = _scan_outputs(_image_root(tmp_path, "1", "1", False), tmp_path / "o",
                        "--sarif-category", "golden/gpu-node/")
    assert got["category"] == "golden/gpu-node/"


def test_no_subject_carries_a_file_line() -> None:
    """Subjects are identities (SARIF fingerprints, JUnit names, metric labels): no fixture
    root, offline or live, yields one with a ``path:line`` in it."""
    file_line = re.compile(r"\S*/\S*:\d+")
    bad = []
    for case in sorted(p for p in ROOTS.iterdir() if (p / "root").is_dir()):
        for live in (False, True):
            run = scan_root(case / "root", live=live, reraise=False)
            bad += [(case.name, f.rule_id, f.result.subject) for f in run.findings
                    if file_line.search(f.result.subject)]
    assert bad == []
