"""Acceptance tests: every fixture root under ``tests/fixtures/roots/<case>/`` is scanned and
its results compared with ``expected.yaml`` beside the root.

``expected.yaml``::

    description: what the case shows
    mode: offline            # or live (scans root/ with --live)
    ruleset: dl-training     # optional, shipped name or path relative to the case
    user: alice              # optional --user
    expect:
      RULE-ID: fail                          # every result of the rule has this status
      RULE-ID: {status: fail, aspect: drift} # ... and this aspect
      RULE-ID: {subjects: {nvme0n1: pass, nvme1n1: fail}}   # per subject
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aiaudit.core import plugins, ruleset
from aiaudit.core.host import Host
from aiaudit.core.scan import ScanOptions, scan
from tests.helpers import ROOTS

CASES = sorted(p.parent for p in ROOTS.glob("*/expected.yaml"))


def _status_spec(spec):
    if isinstance(spec, str):
        return {"status": spec}
    return spec


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fixture_root(case: Path) -> None:
    exp = yaml.safe_load((case / "expected.yaml").read_text())
    rs_ref = exp.get("ruleset", "dl-training")
    if "/" in rs_ref or rs_ref.endswith(".yaml"):
        rs_ref = str(case / rs_ref)
    rs = ruleset.load(rs_ref, plugins.registry(), validate=True)
    host = Host(str(case / "root"), live=exp.get("mode", "offline") == "live")
    only = tuple(exp["expect"])
    run = scan(rs, host, ScanOptions(only=only, user=exp.get("user"), reraise=True,
                                     settings=exp.get("settings") or {}))
    by_rule: dict[str, list] = {}
    for f in run.findings:
        by_rule.setdefault(f.rule_id, []).append(f)
    problems = []
    for rule_id, spec in exp["expect"].items():
        spec = _status_spec(spec)
        findings = by_rule.get(rule_id, [])
        if not findings:
            problems.append(f"{rule_id}: no result")
            continue
        subjects = spec.get("subjects")
        if subjects:
            got = {f.result.subject: f for f in findings}
            for subj, sspec in subjects.items():
                sspec = _status_spec(sspec)
                f = got.get(subj)
                if f is None:
                    problems.append(f"{rule_id}[{subj}]: no result (have {sorted(got)})")
                    continue
                if f.status.value != sspec["status"]:
                    problems.append(f"{rule_id}[{subj}]: {f.status.value} != {sspec['status']}"
                                    f" ({f.result.message})")
                if "aspect" in sspec and (f.result.aspect and f.result.aspect.value) != \
                        sspec["aspect"]:
                    problems.append(f"{rule_id}[{subj}]: aspect {f.result.aspect} != "
                                    f"{sspec['aspect']}")
            continue
        for f in findings:
            if f.status.value != spec["status"]:
                problems.append(f"{rule_id}[{f.result.subject}]: {f.status.value} != "
                                f"{spec['status']} ({f.result.message})")
            if "aspect" in spec and (f.result.aspect and f.result.aspect.value) != \
                    spec["aspect"]:
                problems.append(f"{rule_id}[{f.result.subject}]: aspect {f.result.aspect} != "
                                f"{spec['aspect']}")
            if "message" in spec and spec["message"] not in f.result.message:
                problems.append(f"{rule_id}: message {f.result.message!r} lacks "
                                f"{spec['message']!r}")
            if "evidence" in spec and not any(spec["evidence"] in e.source
                                              for e in f.result.evidence):
                problems.append(f"{rule_id}: no evidence {spec['evidence']!r} in "
                                f"{[e.source for e in f.result.evidence]}")
    assert not problems, "\n".join(problems)


def test_every_case_has_a_root() -> None:
    assert CASES, "no fixture roots found"
    for case in CASES:
        assert (case / "root").is_dir(), f"{case.name}: missing root/"


SHIPPED = ("dl-training", "linux-hardening", "slurm-preflight")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_failure_and_error_names_what_decided_it(case: Path) -> None:
    """Every rule of every shipped ruleset, on every fixture root (offline roots where
    nothing is configured included): a ``fail`` or ``error`` result carries evidence: the
    file and line, the live path, the command, or the default that applied and where it
    was looked for."""
    exp = yaml.safe_load((case / "expected.yaml").read_text())
    live = exp.get("mode", "offline") == "live"
    missing = []
    for name in SHIPPED:
        run = scan(ruleset.load(name, plugins.registry()), Host(str(case / "root"), live=live),
                   ScanOptions(user=exp.get("user") or "alice"))
        missing += [f"{name} {f.rule_id} {f.status.value}: {f.result.message[:120]}"
                    for f in run.findings
                    if f.status.value in ("fail", "error") and not f.result.evidence]
    assert not missing, "\n".join(missing)
