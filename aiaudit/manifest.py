"""Which built-in module provides which check and reporter, so a scan imports only the
modules its rules use (a Slurm prolog scan needs 4 of the check modules, not all of them).

Kept in sync by ``tests/test_plugins_manifest.py``; when it is stale nothing breaks (an id not
found where the manifest says makes the registry import every built-in module), it is only
slower.  Regenerate with ``python -m aiaudit.manifest``.
"""

from __future__ import annotations

BUILTIN_CHECKS: dict[str, str] = {
    "block.read_ahead": "aiaudit.checks.block",
    "block.scheduler": "aiaudit.checks.block",
    "cpu.boost": "aiaudit.checks.cpu",
    "cpu.cstates": "aiaudit.checks.cstates",
    "cpu.epp": "aiaudit.checks.cpu",
    "cpu.governor": "aiaudit.checks.cpu",
    "files.fact": "aiaudit.checks.files",
    "firewall.allowed_ports": "aiaudit.checks.firewall",
    "firewall.default_deny": "aiaudit.checks.firewall",
    "gpu.count": "aiaudit.checks.gpu",
    "gpu.cuda_driver": "aiaudit.checks.gpu",
    "gpu.driver_match": "aiaudit.checks.gpu",
    "gpu.forward_compat": "aiaudit.checks.gpu",
    "gpu.persistence": "aiaudit.checks.gpu",
    "kernel.sysctl": "aiaudit.checks.sysctl",
    "limits.configured": "aiaudit.checks.limits_conf",
    "limits.effective": "aiaudit.checks.limits",
    "limits.pam_stack": "aiaudit.checks.limits",
    "memory.shm": "aiaudit.checks.memory",
    "memory.swap": "aiaudit.checks.memory",
    "memory.thp": "aiaudit.checks.memory",
    "network.exposed_services": "aiaudit.checks.network",
    "network.listening_ports": "aiaudit.checks.network",
    "slurm.job_limits": "aiaudit.checks.slurm",
    "ssh.sshd_kbdinteractive": "aiaudit.checks.sshd",
    "ssh.sshd_option": "aiaudit.checks.sshd",
    "user.not_root": "aiaudit.checks.limits",
}
"""Check id -> module that registers it."""

BUILTIN_REPORTERS: dict[str, str] = {
    "events": "aiaudit.reporters.events",
    "html": "aiaudit.reporters.html",
    "json": "aiaudit.reporters.json",
    "junit": "aiaudit.reporters.junit",
    "prometheus": "aiaudit.reporters.prometheus",
    "sarif": "aiaudit.reporters.sarif",
    "text": "aiaudit.reporters.text",
}
"""Reporter name -> module that registers it."""


def generate() -> str:
    """The source of this module, computed by importing every built-in plugin module."""
    from aiaudit import plugins

    checks: dict[str, str] = {}
    reporters: dict[str, str] = {}
    for mod in plugins.builtin_modules():
        for spec in getattr(mod, "aiaudit_register_checks", list)():
            checks[spec.id] = mod.__name__
        for rep in getattr(mod, "aiaudit_register_reporters", list)():
            reporters[rep.name] = mod.__name__
    with open(__file__, encoding="utf-8") as fh:
        text = fh.read()
    head = text[: text.index("BUILTIN_CHECKS")]
    tail = text[text.index('"""Reporter name -> module that registers it."""'):]
    body = ["BUILTIN_CHECKS: dict[str, str] = {"]
    body += [f'    "{k}": "{v}",' for k, v in sorted(checks.items())]
    body += ["}", '"""Check id -> module that registers it."""', "",
             "BUILTIN_REPORTERS: dict[str, str] = {"]
    body += [f'    "{k}": "{v}",' for k, v in sorted(reporters.items())]
    body += ["}"]
    return head + "\n".join(body) + "\n" + tail


if __name__ == "__main__":  # python -m aiaudit.manifest
    new = generate()
    with open(__file__, "w", encoding="utf-8") as fh:
        fh.write(new)
