"""Which built-in module provides which check and reporter, so a scan imports only the
modules its rules use (a Slurm prolog scan needs 4 of the check modules, not all of them).

Kept in sync by ``tests/test_plugins_manifest.py``; when it is stale nothing breaks (an id not
found where the manifest says makes the registry import every built-in module), it is only
slower.  Regenerate with ``python -m aiaudit.core.manifest``.
"""

from __future__ import annotations

BUILTIN_CHECKS: dict[str, str] = {
    "accounts.privileged_groups": "aiaudit.checks.accounts",
    "accounts.sudo_nopasswd": "aiaudit.checks.accounts",
    "block.read_ahead": "aiaudit.checks.block",
    "block.scheduler": "aiaudit.checks.block",
    "containers.apptainer_setuid": "aiaudit.checks.containers",
    "containers.docker_daemon": "aiaudit.checks.containers",
    "containers.docker_socket": "aiaudit.checks.containers",
    "containers.nvidia_toolkit": "aiaudit.checks.containers",
    "containers.podman_rootless": "aiaudit.checks.containers",
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
    "gpu.fabricmanager": "aiaudit.checks.gpu_readiness",
    "gpu.forward_compat": "aiaudit.checks.gpu",
    "gpu.nouveau": "aiaudit.checks.gpu_readiness",
    "gpu.peermem": "aiaudit.checks.gpu_readiness",
    "gpu.persistence": "aiaudit.checks.gpu",
    "gpu.smi_health": "aiaudit.checks.gpu_readiness",
    "gpu.uvm": "aiaudit.checks.gpu_readiness",
    "iommu.passthrough": "aiaudit.checks.gpu_readiness",
    "irq.balance": "aiaudit.checks.gpu_readiness",
    "kernel.sysctl": "aiaudit.checks.sysctl",
    "kernel.tcp_mem": "aiaudit.checks.tcpmem",
    "kernel.threads_max": "aiaudit.checks.tcpmem",
    "limits.configured": "aiaudit.checks.limits_conf",
    "limits.effective": "aiaudit.checks.limits",
    "limits.pam_stack": "aiaudit.checks.limits",
    "memory.shm": "aiaudit.checks.memory",
    "memory.swap": "aiaudit.checks.memory",
    "memory.thp": "aiaudit.checks.memory",
    "network.exposed_services": "aiaudit.checks.network",
    "network.fabric_mtu": "aiaudit.checks.gpu_readiness",
    "network.listening_ports": "aiaudit.checks.network",
    "pci.acs": "aiaudit.checks.gpu_readiness",
    "pci.link": "aiaudit.checks.gpu_readiness",
    "rdma.ports": "aiaudit.checks.gpu_readiness",
    "slurm.job_limits": "aiaudit.checks.slurm",
    "ssh.sshd_kbdinteractive": "aiaudit.checks.sshd",
    "ssh.sshd_option": "aiaudit.checks.sshd",
    "time.sync": "aiaudit.checks.timesync",
    "updates.security_pending": "aiaudit.checks.updates",
    "updates.unattended": "aiaudit.checks.updates",
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
    from aiaudit.core import plugins

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


if __name__ == "__main__":  # python -m aiaudit.core.manifest
    new = generate()
    with open(__file__, "w", encoding="utf-8") as fh:
        fh.write(new)
