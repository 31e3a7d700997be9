"""``containers.nvidia_toolkit``: the toolkit's version and config.toml."""

from __future__ import annotations

import pytest

from aiaudit.core.model import Status
from tests.helpers import run_check

DPKG = "Package: {p}\nStatus: install ok installed\nArchitecture: amd64\nVersion: {v}\n\n"


@pytest.mark.parametrize(("version", "status"), [
    ("1.17.8-1", Status.PASS), ("1.17.4-1", Status.FAIL), ("1.18.0~rc.1-1", Status.PASS),
    ("1.17.8~rc.1-1", Status.FAIL)])
def test_toolkit_version(make_root, version: str, status: Status) -> None:
    root = make_root({"/var/lib/dpkg/status": DPKG.format(p="nvidia-container-toolkit",
                                                          v=version)})
    [r] = run_check("containers.nvidia_toolkit", root, {"property": "version"})
    assert r.status is status


def test_toolkit_config(make_root) -> None:
    pkg = {"/var/lib/dpkg/status": DPKG.format(p="nvidia-container-toolkit", v="1.17.8-1")}
    got = {r.subject: r.status for r in run_check(
        "containers.nvidia_toolkit", make_root(pkg), {"property": "config"})}
    assert got["accept-nvidia-visible-devices-envvar-when-unprivileged"] is Status.FAIL
    conf = ("accept-nvidia-visible-devices-envvar-when-unprivileged = false\n"
            '[nvidia-container-cli]\nldconfig = "/sbin/ldconfig"\n')
    got = {r.subject: r.status for r in run_check(
        "containers.nvidia_toolkit",
        make_root({**pkg, "/etc/nvidia-container-runtime/config.toml": conf}),
        {"property": "config"})}
    assert got == {"accept-nvidia-visible-devices-envvar-when-unprivileged": Status.PASS,
                   "nvidia-container-cli.ldconfig": Status.FAIL}
    [r] = run_check("containers.nvidia_toolkit", make_root(
        {**pkg, "/etc/nvidia-container-runtime/config.toml": "a = \n"}), {"property": "config"})
    assert r.status is Status.ERROR
    [r] = run_check("containers.nvidia_toolkit", make_root({}), {"property": "config"})
    assert r.status is Status.SKIP
