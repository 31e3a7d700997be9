"""A live host double whose ``nvidia-smi -q -x`` prints a given document (a real capture
from ``tests/fixtures/gpu/xml``), counting the runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from aiaudit.api import CheckContext, Result
from aiaudit.core.host import CommandResult, Host
from tests.checks.readiness_trees import gpu_host

XML = Path(__file__).resolve().parents[2] / "fixtures" / "gpu" / "xml"


class SmiHost(Host):
    """Live, commands allowed; ``run`` answers every command with ``out``."""

    def __init__(self, root: str, out: str, rc: int = 0) -> None:
        super().__init__(root, live=True, allow_commands=True)
        self.out, self.rc, self.calls = out, rc, 0

    def run(self, argv, *, timeout=None):  # type: ignore[override]
        self.calls += 1
        return CommandResult(tuple(argv), self.rc, self.out, "")


def capture(name: str) -> str:
    """A real capture's text."""
    return (XML / name).read_text()


def run_on(host: Host, check_id: str, params: Mapping[str, Any] | None = None,
           rule_id: str = "TEST") -> list[Result]:
    """Run one registered check with the schema's defaults filled in."""
    from aiaudit.core.plugins import registry
    from aiaudit.core.ruleset import _with_defaults

    spec = registry().checks[check_id]
    ctx = CheckContext(host=host, params=_with_defaults(dict(params or {}),
                                                        spec.params_schema),
                       rule_id=rule_id)
    return list(spec.run(ctx))


def smi_host(make_root, xml: str, rc: int = 0, **files: str) -> SmiHost:
    """A GPU host (driver loaded) whose nvidia-smi prints ``xml``."""
    f, links = gpu_host(**files)
    return SmiHost(str(make_root(f, links)), xml, rc)
