"""Whether the scanned root has an sshd to judge, decided without the configuration parser
(:mod:`aiaudit.linux.sshd.config`, 7 M instructions to import): a root without sshd, a
container image say, never loads it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiaudit.linux.packages.installed import dpkg_version

if TYPE_CHECKING:
    from aiaudit.core.host import Host

MAIN_CONFIG = "/etc/ssh/sshd_config"


def not_installed(host: Host) -> str | None:
    """Why the SSH rules do not apply (no ``/etc/ssh/sshd_config`` and no openssh-server
    package), or ``None`` when there is an sshd to judge.  An installed package whose file
    is missing is not a reason to skip: sshd will not start, which the loader reports."""
    if host.lstat_exists(MAIN_CONFIG) or dpkg_version(host, "openssh-server"):
        return None
    return f"openssh-server is not installed in the scanned root (no {MAIN_CONFIG})"
