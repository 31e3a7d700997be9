"""The built-in plugin manifest is in sync, and lazy loading imports only what is used."""

from __future__ import annotations

import subprocess
import sys

from aiaudit.core import manifest


def test_manifest_is_in_sync() -> None:
    """Run `python -m aiaudit.core.manifest` after adding or moving a check or reporter."""
    with open(manifest.__file__, encoding="utf-8") as fh:
        assert fh.read() == manifest.generate()


def test_registry_answers_as_if_everything_were_loaded() -> None:
    code = """
from aiaudit.core import plugins
reg = plugins.registry()
import sys
assert "aiaudit.checks.sshd" not in sys.modules
assert reg.checks["kernel.sysctl"].id == "kernel.sysctl"
assert "aiaudit.checks.sysctl" in sys.modules and "aiaudit.checks.sshd" not in sys.modules
assert "ssh.sshd_option" in reg.checks          # known from the manifest, not imported
assert reg.checks.get("no.such") is None         # unknown: everything loaded, still None
assert "aiaudit.checks.sshd" in sys.modules
assert len(reg.checks) == len(set(reg.checks)) >= 20
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_prolog_scan_imports_only_its_check_modules() -> None:
    code = """
import sys
from aiaudit.cli import main
rc = main(["scan", "--ruleset", "slurm-preflight", "--format", "json", "--output", "/dev/null",
           "--root", "/", "--only", "MEM-DEV-SHM-SIZE"])
loaded = sorted(m for m in sys.modules if m.startswith("aiaudit.checks."))
print(",".join(loaded))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded = out.stdout.strip().split(",")
    assert "aiaudit.checks.memory" in loaded
    for heavy in ("aiaudit.checks.sshd", "aiaudit.checks.firewall", "aiaudit.checks.block"):
        assert heavy not in loaded, loaded


def test_every_hook_is_seen_by_the_fast_hook_filter() -> None:
    """The plugin manager looks only at ``aiaudit_*`` names: every hook specification must
    have one, or its implementations would be silently ignored."""
    from aiaudit import hookspecs
    from aiaudit.core.plugins import HOOK_PREFIX

    specs = [n for n in dir(hookspecs) if hasattr(getattr(hookspecs, n), "aiaudit_spec")]
    assert len(specs) == 3, specs
    assert all(n.startswith(HOOK_PREFIX) for n in specs)
