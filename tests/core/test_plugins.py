"""Built-in plugins are found by the layout rule (the check id is the module path), and lazy
loading imports only what is used."""

from __future__ import annotations

import subprocess
import sys


def test_every_builtin_check_lives_at_the_path_its_id_names() -> None:
    """The layout rule the registry relies on: check ``kernel.sysctl`` is registered by
    ``checks/kernel/sysctl.py`` (``aiaudit.checks.kernel.sysctl``) and by nothing else, one
    check per module; reporter ``json`` by ``aiaudit.reporters.json``."""
    from aiaudit.core.plugins import builtin_module, builtin_modules

    checks: dict[str, str] = {}
    for mod in builtin_modules():
        specs = list(getattr(mod, "aiaudit_register_checks", list)())
        if mod.__name__.startswith("aiaudit.checks."):
            assert [s.id for s in specs] == [mod.__name__.removeprefix("aiaudit.checks.")], \
                mod.__name__
        for s in specs:
            checks[s.id] = mod.__name__
            assert builtin_module("check", s.id) == mod.__name__
        for rep in getattr(mod, "aiaudit_register_reporters", list)():
            assert mod.__name__ == f"aiaudit.reporters.{rep.name}"
            assert builtin_module("reporter", rep.name) == mod.__name__
    assert len(checks) >= 50
    assert builtin_module("check", "no.such") is None
    assert builtin_module("check", "kernel") is None  # a package, not a check module
    assert builtin_module("check", "../x") is None


def test_registry_answers_as_if_everything_were_loaded() -> None:
    code = """
from aiaudit.core import plugins
reg = plugins.registry()
import sys
assert "aiaudit.checks.ssh.sshd_option" not in sys.modules
assert reg.checks["kernel.sysctl"].id == "kernel.sysctl"
assert "aiaudit.checks.kernel.sysctl" in sys.modules
assert "aiaudit.checks.ssh.sshd_option" not in sys.modules
assert "ssh.sshd_option" in reg.checks          # found by its path: only its module imported
assert "aiaudit.checks.firewall.default_deny" not in sys.modules
assert reg.checks.get("no.such") is None         # unknown: everything loaded, still None
assert "aiaudit.checks.firewall.default_deny" in sys.modules
assert len(reg.checks) == len(set(reg.checks)) >= 50
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
    loaded = [m for m in out.stdout.strip().split(",") if m.count(".") >= 3]
    assert loaded == ["aiaudit.checks.memory.shm"], loaded


def test_every_hook_is_seen_by_the_fast_hook_filter() -> None:
    """The plugin manager looks only at ``aiaudit_*`` names: every hook specification must
    have one, or its implementations would be silently ignored."""
    from aiaudit import hookspecs
    from aiaudit.core.plugins import HOOK_PREFIX

    specs = [n for n in dir(hookspecs) if hasattr(getattr(hookspecs, n), "aiaudit_spec")]
    assert len(specs) == 3, specs
    assert all(n.startswith(HOOK_PREFIX) for n in specs)
