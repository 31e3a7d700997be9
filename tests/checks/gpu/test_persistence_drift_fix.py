"""gpu.persistence drift fix (issue 30): nvidia-persistenced is enabled and configured to
turn persistence mode on, a GPU has it off now: the fix restarts the daemon, as the boot
starts it, and neither installs nor enables anything."""

from __future__ import annotations

from pathlib import Path

from aiaudit.api import CheckContext
from aiaudit.core import host as host_mod
from aiaudit.core import plugins
from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, SnippetKind, Status
from aiaudit.core.ruleset import _with_defaults
from tests.checks.gpu.test_persistence import _persist_root

CAPTURES = Path(__file__).resolve().parents[2] / "fixtures" / "gpu" / "xml"
OFF = CAPTURES / "telegraf-a10g.xml"     # real capture: 515.105.01, persistence Disabled


def _live(root: Path, tmp_path: Path, monkeypatch) -> list:
    """The rule on ``root`` as a live host whose nvidia-smi prints the capture ``OFF``."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nexec /bin/cat {OFF}\n")
    smi.chmod(0o755)
    monkeypatch.setattr(host_mod, "TRUSTED_BIN_DIRS", (str(bindir),))
    monkeypatch.setattr("aiaudit.linux.gpu.driver.gate", lambda *a, **k: None)
    spec = plugins.registry().checks["gpu.persistence"]
    host = Host(str(root), live=True, allow_commands=True)
    return list(spec.run(CheckContext(host=host, params=_with_defaults({},
                                                                      spec.params_schema))))


def test_enabled_daemon_off_gpu_restarts_the_daemon(make_root, tmp_path, monkeypatch) -> None:
    [r] = _live(_persist_root(make_root, True), tmp_path, monkeypatch)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.DRIFT)
    assert "boot configuration (nvidia-persistenced.service is enabled" in r.message
    assert [(s.kind, s.content) for s in r.remediation.snippets] == [
        (SnippetKind.COMMAND, "systemctl restart nvidia-persistenced.service")]
    assert "already right" in r.remediation.summary


def test_disabled_daemon_off_gpu_still_enables_it(make_root, tmp_path, monkeypatch) -> None:
    [r] = _live(_persist_root(make_root, False), tmp_path, monkeypatch)
    assert (r.status, r.aspect) == (Status.FAIL, Aspect.RUNTIME)
    assert [s.kind for s in r.remediation.snippets] == ["enable", "command"]
