"""The NVIDIA Container Toolkit: its installed version and ``config.toml``.

- Version: the package in the dpkg database (``nvidia-container-toolkit``, its ``-base``,
  or ``libnvidia-container-tools``), else the rpm database.  NVIDIA's security bulletins:
  CVE-2024-0132 fixed in 1.16.2, CVE-2025-23359 in 1.17.4, CVE-2025-23266/23267 in 1.17.8.
- ``/etc/nvidia-container-runtime/config.toml``:
  ``accept-nvidia-visible-devices-envvar-when-unprivileged`` (default true: any
  unprivileged container may ask for every GPU with an environment variable) and
  ``nvidia-container-cli.ldconfig`` (must start with ``@``: the host's ldconfig; without
  it the container's own binary runs with the hook's privileges).

The TOML reader and the rpm database are loaded only where they are needed.
"""

from __future__ import annotations

import re
from typing import Any

from aiaudit.core.errors import NotFound
from aiaudit.core.host import Host
from aiaudit.linux.packages.installed import dpkg_version

TOOLKIT_TOML = "/etc/nvidia-container-runtime/config.toml"
DEB_PACKAGES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base",
                "libnvidia-container-tools")
RPM_PACKAGES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base")
ENVVAR_KEY = "accept-nvidia-visible-devices-envvar-when-unprivileged"
DEFAULT_LDCONFIG = "@/sbin/ldconfig"


def installed_version(host: Host) -> tuple[str, str] | None:
    """``(package, full version)`` of the installed toolkit, or ``None``."""
    for pkg in DEB_PACKAGES:
        v = dpkg_version(host, pkg)
        if v:
            return pkg, v
    from aiaudit.linux.gpu import stack as gs  # the rpm database: only without a deb

    for name, v in gs.rpm_packages(host).items():
        if name in RPM_PACKAGES:
            return name, v
    return None


def read_config(host: Host) -> tuple[str, dict[str, Any]]:
    """``(text, document)`` of config.toml; ``("", {})`` without the file.  A syntax error
    raises :class:`~aiaudit.core.errors.ParseError`, an unreadable file
    :class:`~aiaudit.core.errors.HostError`."""
    from aiaudit.linux.containers import tomlconf  # only where the toolkit is

    try:
        text = host.read_text(TOOLKIT_TOML)
    except NotFound:
        return "", {}
    return text, tomlconf.parse(text, TOOLKIT_TOML.lstrip("/"))


def config_line(text: str, key: str) -> int | None:
    """1-based line of the first ``key =`` assignment in ``text`` (for evidence)."""
    for n, ln in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*{re.escape(key)}\s*=", ln):
            return n
    return None


def envvar_accepted(config: dict[str, Any]) -> Any:
    """The value of :data:`ENVVAR_KEY` (``True``, the toolkit's default, when unset)."""
    return config.get(ENVVAR_KEY, True)


def ldconfig(config: dict[str, Any]) -> Any:
    """``nvidia-container-cli.ldconfig`` as written (``None`` when unset: the default
    :data:`DEFAULT_LDCONFIG`)."""
    cli = config.get("nvidia-container-cli")
    return cli.get("ldconfig") if isinstance(cli, dict) else None


def ldconfig_from_container(value: Any) -> bool:
    """Whether an ``ldconfig`` setting runs the container image's ldconfig (a path without
    the ``@`` that means "on the host")."""
    return isinstance(value, str) and not value.startswith("@")
