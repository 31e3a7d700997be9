"""apt.conf.d and apt.conf as apt reads them (:mod:`aiaudit.linux.packages.aptconf`),
against ``apt-config``, the oracle."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

AUTO = ('APT::Periodic::Update-Package-Lists "1";\nAPT::Periodic::Unattended-Upgrade "1";\n')

APT_TREES = {
    "plain": {"20auto-upgrades": AUTO},
    "scoped-later-wins": {"20auto-upgrades": AUTO,
                          "50unattended-upgrades.conf": 'APT { Periodic {\n'
                                                        '  Unattended-Upgrade "7"; }; };\n'},
    "ignored-names": {"20auto-upgrades": AUTO, "99off.disabled": 'APT::Periodic::'
                      'Unattended-Upgrade "0";\n', "98off.bak": 'APT::Periodic::'
                      'Unattended-Upgrade "0";\n', "97off~": 'APT::Periodic::'
                      'Unattended-Upgrade "0";\n'},
    "comments-and-clear": {"10a": '# hash\n/* block\n*/ APT::Periodic::Update-Package-Lists '
                                  '"1"; // end\nAPT::Periodic::Unattended-Upgrade "1";\n',
                           "20b": "#clear APT::Periodic::Unattended-Upgrade;\n"},
    "main-file-last": {"20auto-upgrades": AUTO, "@main": 'APT::Periodic::'
                       'Unattended-Upgrade "0";\n'},
}


@pytest.mark.skipif(shutil.which("apt-config") is None and not os.environ.get("CI"),
                    reason="needs apt-config (the oracle)")
@pytest.mark.parametrize("name", sorted(APT_TREES))
def test_apt_conf_matches_apt_config(make_root, tmp_path, name: str) -> None:
    """Our reading of apt.conf.d + apt.conf against apt's own: APT_CONFIG points
    Dir::Etc::parts/main at the tree (apt-pkg pkgInitConfig reads parts, then main)."""
    from aiaudit.core.host import Host
    from aiaudit.linux.packages.aptconf import apt_config

    files = {("/etc/apt/apt.conf" if n == "@main" else f"/etc/apt/apt.conf.d/{n}"): t
             for n, t in APT_TREES[name].items()}
    root = make_root(files)
    main = tmp_path / f"{name}-main.conf"
    main.write_text(f'Dir::Etc::parts "{root}/etc/apt/apt.conf.d";\n'
                    f'Dir::Etc::main "{root}/etc/apt/apt.conf";\n')
    ours, problems = apt_config(Host(str(root)))
    assert not problems
    for key in ("APT::Periodic::Unattended-Upgrade", "APT::Periodic::Update-Package-Lists"):
        res = subprocess.run(["apt-config", "shell", "V", key], capture_output=True, text=True,
                             env={**os.environ, "APT_CONFIG": str(main)}, check=True)
        real = res.stdout.strip()[3:-1] if res.stdout.strip() else ""
        got = ours.get(key.lower())
        assert (got[0] if got else "") == real, (key, got, res.stdout)


# ------------------------------------------------------------------ without the oracle
def test_files_in_apt_order_and_problems(make_root) -> None:
    from aiaudit.core.host import Host
    from aiaudit.linux.packages import aptconf

    root = make_root({"/etc/apt/apt.conf.d/20b": 'A::B "2";\n',
                      "/etc/apt/apt.conf.d/10a": 'A::B "1";\nA::C "1";\n',
                      "/etc/apt/apt.conf.d/30c.conf": "A { B \"3\"\n",
                      "/etc/apt/apt.conf.d/40d.list": 'A::C "4";\n',
                      "/etc/apt/apt.conf.d/50e.dpkg-old": 'A::C "5";\n',
                      "/etc/apt/apt.conf": 'A::D "main";\n'})
    host = Host(str(root))
    assert aptconf.config_files(host) == [
        "/etc/apt/apt.conf.d/10a", "/etc/apt/apt.conf.d/20b", "/etc/apt/apt.conf.d/30c.conf",
        "/etc/apt/apt.conf"]
    cfg = aptconf.load(host)
    assert cfg.values == {"a::b": ("2", 1, "/etc/apt/apt.conf.d/20b"),
                          "a::c": ("1", 2, "/etc/apt/apt.conf.d/10a"),
                          "a::d": ("main", 1, "/etc/apt/apt.conf")}
    assert cfg.bad == ("/etc/apt/apt.conf.d/30c.conf",)
    assert len(cfg.problems) == 1 and "unclosed" in cfg.problems[0]
    assert aptconf.apt_config(host) == (cfg.values, list(cfg.problems))


def test_parse_ops_statements_and_scopes() -> None:
    from aiaudit.core.errors import ParseError
    from aiaudit.linux.packages import aptconf

    text = ('APT { Periodic { Unattended-Upgrade "1"; }; };\n#clear APT::Periodic;\n'
            'List { "a"; "b"; };\n#include "x";\nX "y";\n')
    assert aptconf.parse_ops(text) == [("apt::periodic::unattended-upgrade", "1", 1),
                                       ("apt::periodic", None, 2), ("x", "y", 5)]
    for bad in ("}", "A {", "A { " * 70 + "}" * 70):
        with pytest.raises(ParseError):
            aptconf.parse_ops(bad)


@pytest.mark.parametrize(("value", "on"), [("1", True), ("0", False), ("always", True),
                                           ("2d", True), ("12h", True), ("0d", False),
                                           ("", False), ("yes", False), (" 7 ", True)])
def test_periodic_on(value: str, on: bool) -> None:
    from aiaudit.linux.packages.aptconf import periodic_on

    assert periodic_on(value) is on
