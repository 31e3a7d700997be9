"""Test support for the operating modes: a scripted check and rulesets that use it.

``test.scripted`` yields exactly the results its params list (or sleeps first), so waiver,
change and exit-code logic can be tested without depending on what a real check finds.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import pytest
import yaml

from aiaudit.api import CheckContext, CheckSpec, Result, Status
from aiaudit.core import plugins
from aiaudit.core.model import Finding, HostInfo, RunResult, Severity
from tests.helpers import AIAUDIT_SCRIPT

REPO = Path(__file__).resolve().parent.parent
AIAUDIT = AIAUDIT_SCRIPT
"""The ``aiaudit`` console script next to the interpreter running the tests (a test that
needs it checks ``AIAUDIT.exists()`` and skips without it)."""


def need(ok: bool, why: str) -> None:
    """Skip the test when ``ok`` is false - but fail it in CI, which must run it."""
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"this test needs {why} in CI")
        pytest.skip(f"needs {why}")


def need_program(program: str) -> None:
    """:func:`need` for a program on PATH."""
    need(shutil.which(program) is not None, program)


def _run(ctx: CheckContext) -> Iterator[Result]:
    if ctx.params.get("sleep"):
        time.sleep(float(ctx.params["sleep"]))
    for r in ctx.params["results"]:
        yield Result(status=Status(r["status"]), subject=r.get("subject", "-"),
                     message=r.get("message", f"scripted {r['status']} for user "
                                                  f"{ctx.user} from {ctx.user_source}"),
                     expected=r.get("expected"), actual=r.get("actual"))


SCRIPTED = CheckSpec(
    id="test.scripted", title="Scripted results", run=_run,
    params_schema={"type": "object", "additionalProperties": False, "required": ["results"],
                   "properties": {"results": {"type": "array"}, "sleep": {"type": "number"}}},
)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Factory: ``scripted({RULE_ID: (severity, [result dicts]) or (sev, results, sleep)})``
    -> path of a ruleset file whose rules use ``test.scripted``; the check is registered
    for the test's duration."""
    reg = plugins.registry()
    patched = replace(reg, checks={**reg.checks, SCRIPTED.id: SCRIPTED})
    monkeypatch.setattr(plugins, "_REGISTRY", patched)
    counter = iter(range(1000))

    def factory(rules: Mapping[str, Sequence[Any]]) -> Path:
        doc = {"ruleset": "scripted", "version": "1", "rules": []}
        for rid, spec in rules.items():
            params: dict[str, Any] = {"results": list(spec[1])}
            if len(spec) > 2:
                params["sleep"] = spec[2]
            doc["rules"].append({"id": rid, "check": "test.scripted", "severity": spec[0],
                                 "title": f"title of {rid}", "params": params})
        path = tmp_path / f"scripted{next(counter)}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    return factory


HOST = HostInfo(hostname="gpu-a1", machine_id="0" * 32, os_name="Debian", os_version="12",
                os_id="debian", kernel=None, root="/", mode="live")


def finding(rule: str, status: str, subject: str = "-", severity: str = "high") -> Finding:
    """A finding as the runner would make it (no waiver)."""
    return Finding(rule_id=rule, check="test.scripted", severity=Severity(severity),
                   title=f"title of {rule}",
                   result=Result(status=Status(status), subject=subject, message=status))


def run_of(findings: Sequence[Finding], run_id: str = "r1", host: HostInfo = HOST,
           ruleset: str = "scripted") -> RunResult:
    """A RunResult around ``findings`` (rules derived from them)."""
    from aiaudit.core.model import RuleInfo

    rules = {f.rule_id: RuleInfo(id=f.rule_id, check=f.check, severity=f.severity,
                                 title=f.title) for f in findings}
    return RunResult(tool_version="0", run_id=run_id, started="2026-01-01T00:00:00Z",
                     duration_s=0.0, host=host, ruleset=ruleset, ruleset_version="1",
                     rules=tuple(rules.values()), findings=tuple(findings))
