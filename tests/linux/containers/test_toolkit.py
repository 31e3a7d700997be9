"""The NVIDIA Container Toolkit's version and config.toml
(:mod:`aiaudit.linux.containers.toolkit`)."""

from __future__ import annotations

import pytest

from aiaudit.core.errors import ParseError
from aiaudit.core.host import Host
from aiaudit.linux.containers import toolkit

DPKG = "Package: {p}\nStatus: install ok installed\nArchitecture: amd64\nVersion: {v}\n\n"


def test_installed_version_from_dpkg(make_root) -> None:
    assert toolkit.installed_version(Host(str(make_root({})))) is None
    root = make_root({"/var/lib/dpkg/status": DPKG.format(p="libnvidia-container-tools",
                                                          v="1.17.8-1")})
    assert toolkit.installed_version(Host(str(root))) == ("libnvidia-container-tools",
                                                          "1.17.8-1")


def test_read_config(make_root) -> None:
    assert toolkit.read_config(Host(str(make_root({})))) == ("", {})
    text = f'{toolkit.ENVVAR_KEY} = false\n[nvidia-container-cli]\n  ldconfig = "/sbin/x"\n'
    got, cfg = toolkit.read_config(Host(str(make_root({toolkit.TOOLKIT_TOML: text}))))
    assert got == text
    assert toolkit.envvar_accepted(cfg) is False
    assert toolkit.ldconfig(cfg) == "/sbin/x"
    assert toolkit.config_line(text, "ldconfig") == 3
    assert toolkit.config_line(text, "missing") is None
    with pytest.raises(ParseError):
        toolkit.read_config(Host(str(make_root({toolkit.TOOLKIT_TOML: "a = \n"}))))


def test_defaults_and_ldconfig_side() -> None:
    assert toolkit.envvar_accepted({}) is True
    assert toolkit.ldconfig({}) is None
    assert toolkit.ldconfig({"nvidia-container-cli": "x"}) is None
    assert toolkit.ldconfig_from_container("/sbin/ldconfig")
    assert not toolkit.ldconfig_from_container("@/sbin/ldconfig")
    assert not toolkit.ldconfig_from_container(None)
