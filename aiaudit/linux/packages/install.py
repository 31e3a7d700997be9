"""The command that installs a package on the scanned system, as its distribution does.

A fix pasted as root must not stop at a prompt (the lines pasted after it would be read as
its answer), so every command is non-interactive; a configuration file the fix wrote
before the package arrives is kept (``--force-confold``: dpkg would otherwise ask; rpm
keeps a changed ``%config(noreplace)`` file and writes ``.rpmnew``).
"""

from __future__ import annotations

from typing import Mapping

from aiaudit.core.host import Host
from aiaudit.core.identity import os_release
from aiaudit.core.model import Snippet


def family(host: Host) -> str:
    """The scanned root's distribution family (os-release ``ID`` and ``ID_LIKE``):
    ``ubuntu``, ``debian``, ``rhel``, ``suse`` or ``other``."""
    osr = os_release(host)
    ids = {osr.get("ID", "")} | set(osr.get("ID_LIKE", "").split())
    if "ubuntu" in ids:
        return "ubuntu"
    if "debian" in ids:
        return "debian"
    if ids & {"rhel", "fedora", "centos", "rocky", "almalinux", "ol"}:
        return "rhel"
    if ids & {"suse", "sles", "opensuse", "opensuse-leap"}:
        return "suse"
    return "other"


_TOOL = {"debian": "apt-get install -y -o Dpkg::Options::=--force-confold",
         "ubuntu": "apt-get install -y -o Dpkg::Options::=--force-confold",
         "rhel": "dnf install -y", "suse": "zypper --non-interactive install"}


def install_command(host: Host, package: str | Mapping[str, str]) -> str:
    """The command that installs ``package`` (one name, or a name per family with an
    optional ``"other"``) on the scanned system; on a family it does not know, Debian's
    (the command may be followed by ``&&``: no comment is added to it)."""
    fam = family(host)
    name = package if isinstance(package, str) else package.get(fam, package.get("other", ""))
    return f"{_TOOL.get(fam, _TOOL['debian'])} {name}"


def install_and_enable(host: Host, package: str | Mapping[str, str], unit: str,
                       why: str, *, start: bool = True) -> tuple[tuple[Snippet, ...], str]:
    """How to install ``package`` and enable ``unit`` at every boot (and, with ``start``,
    start it now): on a running system, one command (the unit exists only once the package
    is in, so enabling it is part of the same commands); scanning an image, ``(), manual``
    text for where the image is built (a command here would install on the machine it is
    pasted on).  ``why`` describes the command."""
    enable = f"{install_command(host, package)} && systemctl enable"
    if host.live:
        return (Snippet.command(f"{enable}{' --now' if start else ''} {unit}", why),), ""
    return (), f"In the image's build, not on this machine: `{enable} {unit}`."
