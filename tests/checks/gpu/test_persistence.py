"""``gpu.persistence``: nvidia-persistenced at boot, nvidia-smi live; an nvidia-smi in a
scanned root is never run."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from aiaudit.api import CheckContext
from aiaudit.core import host as host_mod
from aiaudit.core.host import Host
from aiaudit.core.model import Aspect, Status
from tests.checks.gpu.trees import UNIT, by_subject, stack
from tests.helpers import ROOTS, run_check


def _persist_root(make_root, enabled: bool, extra: dict | None = None) -> Path:
    links = {}
    if enabled:
        links["/etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service"] = \
            "/lib/systemd/system/nvidia-persistenced.service"
    return stack(make_root, files={"/lib/systemd/system/nvidia-persistenced.service": UNIT,
                                   **(extra or {})}, links=links)


def test_persistence_offline(make_root) -> None:
    res = run_check("gpu.persistence", _persist_root(make_root, True))
    assert res[0].status is Status.PASS and res[0].aspect is Aspect.PERSISTED
    res = run_check("gpu.persistence", _persist_root(make_root, False))
    assert res[0].status is Status.FAIL
    kinds = {s.kind: s.content for s in res[0].remediation.snippets}
    assert kinds["enable"] == "nvidia-persistenced.service"
    assert kinds["command"] == "systemctl start nvidia-persistenced"
    dropin = {"/etc/systemd/system/nvidia-persistenced.service.d/no.conf":
              "[Service]\nExecStart=\nExecStart=/usr/bin/nvidia-persistenced "
              "--no-persistence-mode\n"}
    res = run_check("gpu.persistence", _persist_root(make_root, True, dropin))
    assert res[0].status is Status.FAIL and "--no-persistence-mode" in res[0].message
    res = run_check("gpu.persistence", stack(make_root))
    assert res[0].status is Status.FAIL and "not installed" in res[0].message
    assert "nvidia-compute-utils-535-server" in res[0].remediation.snippets[0].content


def test_nvidia_smi_in_root_is_never_run() -> None:
    marker = Path("/tmp/aiaudit-ran-fixture-nvidia-smi")
    marker.unlink(missing_ok=True)
    root = ROOTS / "gpu-nvidia-smi-in-root" / "root"
    assert os.access(root / "usr/bin/nvidia-smi", os.X_OK)
    t0 = time.monotonic()
    res = run_check("gpu.persistence", root, live=True, params={"timeout": 60})
    # wall time: the fixture's nvidia-smi sleeps, so a run of it would show only on the clock
    # (held up to the 60 s timeout); 30 s is generous for a loaded machine
    assert time.monotonic() - t0 < 30
    assert res[0].status is Status.FAIL and "only when scanning the real /" in res[0].message
    assert not marker.exists()


def _fake_smi(tmp_path: Path, monkeypatch, body: str) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + body)
    smi.chmod(0o755)
    monkeypatch.setattr(host_mod, "TRUSTED_BIN_DIRS", (str(bindir),))
    # this machine has no GPU: let the rule apply as on a GPU node
    monkeypatch.setattr("aiaudit.linux.gpu.driver.gate", lambda *a, **k: None)


def _live_persistence(params: dict | None = None):
    from aiaudit.core import plugins
    from aiaudit.core.ruleset import _with_defaults

    spec = plugins.registry().checks["gpu.persistence"]
    ctx = CheckContext(host=Host("/"), params=_with_defaults(dict(params or {}),
                                                             spec.params_schema))
    return list(spec.run(ctx))


def test_hanging_nvidia_smi_is_an_error_not_a_hang(tmp_path, monkeypatch) -> None:
    pidfile = tmp_path / "pid"
    _fake_smi(tmp_path, monkeypatch, f"echo $$ > {pidfile}\nexec /bin/sleep 60\n")
    t0 = time.monotonic()
    res = _live_persistence({"timeout": 1})
    took = time.monotonic() - t0
    # a deadline test, so wall time: the 1 s timeout must stop an nvidia-smi that sleeps
    # 60 s; generous for a loaded machine, far below the hang
    assert took < 30, took
    assert [r.status for r in res] == [Status.ERROR]
    assert "timed out" in res[0].message
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the whole process group was killed


CAPTURES = Path(__file__).resolve().parents[2] / "fixtures" / "gpu" / "xml"


def test_live_nvidia_smi_output(tmp_path, monkeypatch) -> None:
    """Real captures (tests/fixtures/gpu): persistence_mode of each GPU of nvidia-smi -q -x."""
    off = CAPTURES / "telegraf-a10g.xml"          # 515.105.01, persistence Disabled
    on = CAPTURES / "telegraf-rtx-3060-v12.xml"   # 570.124.04, persistence Enabled
    _fake_smi(tmp_path, monkeypatch, f"exec /bin/cat {off}\n")
    res = by_subject(_live_persistence())
    assert res["GPU 0 (00000000:00:1E.0)"].status is Status.FAIL
    assert res["GPU 0 (00000000:00:1E.0)"].aspect is Aspect.RUNTIME
    (tmp_path / "bin" / "nvidia-smi").write_text(f"#!/bin/sh\nexec /bin/cat {on}\n")
    res = by_subject(_live_persistence())
    # this machine has no nvidia-persistenced enabled: on now, lost at reboot
    assert res["GPU 0 (00000000:2D:00.0)"].aspect is Aspect.DRIFT
    res = by_subject(_live_persistence({"persist": False}))
    assert res["GPU 0 (00000000:2D:00.0)"].status is Status.PASS


def test_persistence_not_reported_is_skipped(tmp_path, monkeypatch) -> None:
    """A Windows/vGPU guest capture reports persistence_mode N/A: not applicable there."""
    _fake_smi(tmp_path, monkeypatch, f"exec /bin/cat {CAPTURES / 'telegraf-tesla_p4.xml'}\n")
    [r] = _live_persistence()
    assert r.status is Status.SKIP and "[N/A]" in r.message


def test_nvidia_smi_failing_or_missing(tmp_path, monkeypatch) -> None:
    _fake_smi(tmp_path, monkeypatch, "echo \"NVIDIA-SMI has failed because it couldn't "
                                     "communicate with the NVIDIA driver.\"\nexit 9\n")
    res = _live_persistence()
    assert res[0].status is Status.ERROR and "exited 9" in res[0].message
    monkeypatch.setattr(host_mod, "TRUSTED_BIN_DIRS", (str(tmp_path / "empty"),))
    res = _live_persistence()
    assert res[0].status is Status.ERROR and "not installed" in res[0].message


def test_persistence_not_installed_says_where_the_unit_was_looked_for(make_root) -> None:
    from aiaudit.linux.systemd.units import UNIT_DIRS

    [r] = run_check("gpu.persistence", stack(make_root))
    assert r.status is Status.FAIL and "is not installed" in r.message
    [e] = r.evidence
    assert e.kind == "default" and e.value == "not installed"
    assert e.source.startswith("unit nvidia-persistenced.service in ")
    assert all(d.lstrip("/") in e.source for d in UNIT_DIRS)


def test_persistence_masked_and_disabled_are_file_evidence(make_root) -> None:
    masked = stack(make_root, links={
        "/etc/systemd/system/nvidia-persistenced.service": "/dev/null"},
        files={"/lib/systemd/system/nvidia-persistenced.service": UNIT})
    [r] = run_check("gpu.persistence", masked)
    assert r.status is Status.FAIL and "masked" in r.message
    assert [(e.kind, e.path) for e in r.evidence] == [
        ("file", "/etc/systemd/system/nvidia-persistenced.service")]
    [r] = run_check("gpu.persistence", _persist_root(make_root, False))
    assert r.status is Status.FAIL
    assert [(e.kind, e.path) for e in r.evidence] == [
        ("file", "/lib/systemd/system/nvidia-persistenced.service")]
