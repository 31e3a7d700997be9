"""A live host double whose ``nvidia-smi nvlink --status`` / ``--errorcounters`` print
given texts (the fixtures of ``tests/fixtures/gpu/nvlink``), counting the runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from aiaudit.api import CheckContext, Result
from aiaudit.core.host import CommandResult, Host
from tests.checks.readiness_trees import gpu_host, pci

NVLINK = Path(__file__).resolve().parents[2] / "fixtures" / "gpu" / "nvlink"
STATUS = ("nvidia-smi", "nvlink", "--status")
ERRORS = ("nvidia-smi", "nvlink", "--errorcounters")


def fixture(name: str) -> str:
    """A fixture's text."""
    return (NVLINK / name).read_text()


class NvlinkHost(Host):
    """Live, commands allowed; ``run`` answers from ``outputs`` (argv -> (rc, stdout))."""

    def __init__(self, root: str, outputs: Mapping[tuple[str, ...], tuple[int, str]]) -> None:
        super().__init__(root, live=True, allow_commands=True)
        self.outputs, self.calls = dict(outputs), []  # type: list[tuple[str, ...]]

    def run(self, argv, *, timeout=None):  # type: ignore[override]
        self.calls.append(tuple(argv))
        rc, out = self.outputs.get(tuple(argv), (127, ""))
        return CommandResult(tuple(argv), rc, out, "" if rc == 0 else "nvidia-smi: error")


def nvlink_host(make_root, status: str = "", errors: str = "", *, nvswitches: int = 0,
                rc: int = 0, boot: str = "b1", uptime: float = 1000.0) -> NvlinkHost:
    """A GPU host (driver loaded; ``nvswitches`` NVSwitches on the PCI bus) whose nvidia-smi
    nvlink prints ``status`` and ``errors``."""
    f, links = gpu_host(**{"/proc/sys/kernel/random/boot_id": boot + "\n",
                           "/proc/uptime": f"{uptime:.2f} 123.00\n"})
    for i in range(nvswitches):
        pci(f, links, f"0000:00:1{i}.0/0000:{0x80 + i:02x}:00.0", 0x10DE, 0x068000)
    return NvlinkHost(str(make_root(f, links)), {STATUS: (rc, status), ERRORS: (rc, errors)})


def run_on(host: Host, check_id: str, params: Mapping[str, Any] | None = None,
           settings: Mapping[str, Any] | None = None, rule_id: str = "TEST") -> list[Result]:
    """Run one registered check with the schema's defaults filled in."""
    from aiaudit.core.plugins import registry
    from aiaudit.core.ruleset import _with_defaults

    spec = registry().checks[check_id]
    ctx = CheckContext(host=host, params=_with_defaults(dict(params or {}),
                                                        spec.params_schema),
                       rule_id=rule_id, settings=dict(settings or {}))
    return list(spec.run(ctx))
