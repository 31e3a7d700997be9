"""The built wheel, installed non-editable into a fresh venv, works from another directory;
a third-party plugin installed next to it registers through the ``aiaudit`` entry point."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from aiaudit.api import CheckSpec, hookimpl
from aiaudit.core import plugins, ruleset
from aiaudit.core.errors import UsageError
from aiaudit.core.host import Host
from aiaudit.core.scan import ScanOptions, scan
from tests.helpers import FIXTURES

PROJECT = Path(__file__).resolve().parent.parent
PLUGINS = FIXTURES / "plugins"
DEMO = PLUGINS / "aiaudit-demo-plugin"
COPY_IGNORE = shutil.ignore_patterns(".venv", "venv", "build", "dist", "*.egg-info",
                                     "__pycache__", ".git", ".pytest_cache", ".ruff_cache",
                                     ".hypothesis", "tests")


def _run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-3000:]}")
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory):
    """(venv bin dir, wheel path, an empty working directory, clean env)."""
    base = tmp_path_factory.mktemp("pkg")
    src = base / "src"
    # build from a clean copy: a stale build/ in the checkout would leak deleted modules
    shutil.copytree(PROJECT, src, ignore=COPY_IGNORE, symlinks=True)
    dist = base / "dist"
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(src)], cwd=base)
    wheel = next(dist.glob("aiaudit-*.whl"))
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=base)
    bin_ = venv / "bin"
    env = {"PATH": f"{bin_}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": os.environ.get("HOME", "/"),
           "LC_ALL": "C.UTF-8"}
    env.update({k: v for k, v in os.environ.items() if k.startswith(("PIP_", "http", "HTTP"))})
    _run([str(bin_ / "python"), "-m", "pip", "install", "-q", str(wheel)], cwd=base, env=env)
    demo = base / "demo-plugin"  # a copy: building writes build/ and *.egg-info beside it
    shutil.copytree(DEMO, demo, ignore=COPY_IGNORE)
    _run([str(bin_ / "python"), "-m", "pip", "install", "-q", "--no-deps", str(demo)],
         cwd=base, env=env)
    work = base / "elsewhere"
    work.mkdir()
    return bin_, wheel, work, env


@pytest.mark.slow
def test_wheel_contents(installed) -> None:
    _, wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for want in ("aiaudit/rulesets/dl-training.yaml", "aiaudit/py.typed",
                 "aiaudit/schemas/report.schema.json", "aiaudit/schemas/ruleset.schema.json",
                 "aiaudit/checks/data/network_services.yaml",
                 "aiaudit/checks/data/network_services.json"):
        assert want in names, want
    # every module of the source tree is in the wheel (a package missing from
    # pyproject.toml's list would be left out silently)
    sources = {str(f.relative_to(PROJECT)) for f in (PROJECT / "aiaudit").rglob("*.py")}
    sources |= {"aiaudit/" + str(f.relative_to(PROJECT))
                for f in (PROJECT / "checks").rglob("*.py")}
    missing = sorted(s for s in sources if "__pycache__" not in s and s not in names)
    assert not missing, missing
    assert not any(n.startswith(("checks/", "tests/", "rulesets/", "schemas/")) for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "aiaudit = aiaudit.cli:run" in zipfile.ZipFile(wheel).read(entry).decode()


@pytest.mark.slow
def test_installed_scan_from_another_directory(installed) -> None:
    bin_, _, work, env = installed
    proc = _run([str(bin_ / "aiaudit"), "scan", "--ruleset", "dl-training", "--format",
                 "json"], cwd=work, env=env, check=False, timeout=300)
    assert proc.returncode in (0, 1, 3), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["host"]["mode"] == "live" and doc["results"]
    assert doc["ruleset"]["name"] == "dl-training"
    version = _run([str(bin_ / "aiaudit"), "--version"], cwd=work, env=env).stdout
    assert version.startswith("aiaudit ")
    mod = _run([str(bin_ / "python"), "-m", "aiaudit", "rules"], cwd=work, env=env)
    assert "SYSCTL-VM-SWAPPINESS" in mod.stdout


@pytest.mark.slow
def test_installed_package_layout(installed) -> None:
    bin_, _, work, env = installed
    code = """
import importlib.resources as r, importlib.util, json
import aiaudit, aiaudit.checks.kernel.sysctl
print(json.dumps({
    "file": aiaudit.__file__,
    "rulesets": r.files("aiaudit.rulesets").joinpath("dl-training.yaml").is_file(),
    "schemas": sorted(p.name for p in r.files("aiaudit.schemas").iterdir()
                      if p.name.endswith(".json")),
    "checks_toplevel": importlib.util.find_spec("checks") is not None,
}))
"""
    out = json.loads(_run([str(bin_ / "python"), "-c", code], cwd=work, env=env).stdout)
    assert str(PROJECT) not in out["file"] and "site-packages" in out["file"]
    assert out["rulesets"] is True
    assert {"report.schema.json", "ruleset.schema.json"} <= set(out["schemas"])
    assert out["checks_toplevel"] is False
    proc = _run([str(bin_ / "python"), "-c", "import checks"], cwd=work, env=env, check=False)
    assert proc.returncode == 1 and "ModuleNotFoundError" in proc.stderr


@pytest.mark.slow
def test_third_party_plugin_rule_runs(installed, make_root) -> None:
    bin_, _, work, env = installed
    root = make_root({"/etc/motd": "Welcome\ncluster: gpu-a\n",
                      "/etc/sysctl.d/10.conf": "vm.swappiness = 60\n"})
    proc = _run([str(bin_ / "aiaudit"), "scan", "--ruleset", str(PLUGINS / "demo.yaml"),
                 "--root", str(root), "--format", "json"], cwd=work, env=env, check=False)
    assert proc.returncode == 1, proc.stderr
    res = {r["rule_id"]: r for r in json.loads(proc.stdout)["results"]}
    assert res["DEMO-MOTD"]["status"] == "pass" and res["DEMO-MOTD"]["check"] == "demo.motd"
    assert res["DEMO-MOTD"]["evidence"][0]["source"] == "etc/motd:2"
    assert res["DEMO-SWAPPINESS"]["status"] == "fail"
    ok = _run([str(bin_ / "aiaudit"), "validate", str(PLUGINS / "demo.yaml")], cwd=work,
              env=env)
    assert "ok (demo 1, 2 rules)" in ok.stdout


@pytest.mark.slow
def test_timeout_deadline_holds_in_installed_cli(installed, make_root) -> None:
    bin_, _, work, env = installed
    root = make_root({"/etc/motd": "cluster: gpu-a\n"})
    t0 = time.monotonic()
    # the rule sleeps 60 s and its own budget is 50 s: only the 2 s deadline ends it soon
    proc = _run([str(bin_ / "aiaudit"), "scan", "--ruleset", str(PLUGINS / "demo-sleep.yaml"),
                 "--root", str(root), "--timeout", "2", "--rule-timeout", "50",
                 "--format", "json"], cwd=work, env=env, check=False, timeout=120)
    took = time.monotonic() - t0
    assert proc.returncode == 3, proc.stderr  # the hung rule is high: could not evaluate
    # a deadline test, so wall time: interpreter start-up plus the 2 s deadline, generous
    # for a loaded machine and far below the 50 s the sleeping rule would hold the scan
    assert took < 25, took
    doc = json.loads(proc.stdout)
    res = {r["rule_id"]: r for r in doc["results"]}
    assert res["DEMO-MOTD"]["status"] == "pass"
    assert res["DEMO-SLEEP"]["status"] == "error" and "deadline" in res["DEMO-SLEEP"]["message"]
    assert res["DEMO-AFTER"]["status"] == "error"
    assert doc["duration_s"] < 2 + 8  # the scan's own clock: the deadline, as generous


def test_demo_plugin_registers_in_process(make_root) -> None:
    """The same plugin module through :func:`plugins.build_registry` (fast, no install)."""
    sys.path.insert(0, str(DEMO))
    try:
        import aiaudit_demo.plugin as demo
    finally:
        sys.path.remove(str(DEMO))
    reg = plugins.build_registry(entry_points=False, extra=[demo])
    assert {"demo.motd", "demo.sleep", "kernel.sysctl"} <= set(reg.checks)
    rs = ruleset.load(str(PLUGINS / "demo.yaml"), reg, validate=True)
    root = make_root({"/etc/motd": "hello\n", "/etc/sysctl.d/1.conf": "vm.swappiness=1\n"})
    run = scan(rs, Host(str(root)), ScanOptions())
    got = {f.rule_id: f.status.value for f in run.findings}
    assert got == {"DEMO-MOTD": "fail", "DEMO-SWAPPINESS": "pass"}
    fail = next(f for f in run.findings if f.rule_id == "DEMO-MOTD")
    assert fail.result.remediation.snippets[0].path == "/etc/motd"
    with pytest.raises(UsageError, match=r"check .demo\.motd. is registered twice"):
        set(plugins.build_registry(entry_points=False, extra=[demo, _Dup()]).checks)


class _Dup:
    """A second plugin registering an id that is already taken."""

    @staticmethod
    @hookimpl
    def aiaudit_register_checks() -> list[CheckSpec]:
        """Registers ``demo.motd`` again."""
        return [CheckSpec(id="demo.motd", title="dup", run=lambda ctx: iter(()))]
