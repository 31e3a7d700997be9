"""Hosts for the firewall tests: fixture roots where one mechanism loads at boot (nftables,
ufw, firewalld), a Host whose commands answer canned output, and check runners."""

from __future__ import annotations

import json
import sys
from typing import Any

from aiaudit.core.errors import CommandError
from aiaudit.core.host import CommandResult, Host
from tests.helpers import FIXTURES, run_check
from tests.netns import run_in

NFT = FIXTURES / "nft"
FWD = FIXTURES / "firewalld"
NFT_UNIT = ("[Unit]\nDescription=nftables\n[Service]\nType=oneshot\n"
            "ExecStart=/usr/sbin/nft -f /etc/nftables.conf\n[Install]\nWantedBy=sysinit.target\n")
SSH_ONLY = """#!/usr/sbin/nft -f
flush ruleset
table inet filter {
  chain input {
    type filter hook input priority filter; policy drop;
    iif "lo" accept
    ct state established,related accept
    tcp dport 22 accept
  }
}
"""
UFW_RULES = ("*filter\n:ufw-user-input - [0:0]\n### RULES ###\n\n"
             "### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in\n"
             "-A ufw-user-input -p tcp --dport 22 -j ACCEPT\n"
             "### tuple ### allow tcp 8888 0.0.0.0/0 any 0.0.0.0/0 in\nCOMMIT\n")


def enabled(unit: str, target: str = "multi-user.target") -> dict[str, str]:
    """The link that enables ``unit`` (``WantedBy=target``)."""
    return {f"/etc/systemd/system/{target}.wants/{unit}": f"/lib/systemd/system/{unit}"}


def nft_root(make_root, conf: str, *, enable: bool = True, extra: dict | None = None):
    """A root whose nftables.service (enabled unless ``enable`` is False) loads ``conf``."""
    files = {"/etc/nftables.conf": conf, "/usr/lib/systemd/system/nftables.service": NFT_UNIT,
             **(extra or {})}
    return make_root(files, enabled("nftables.service", "sysinit.target") if enable else {})


def ufw_root(make_root, *, enabled_conf: str = "yes", unit: bool = True, ipv6: str = "yes"):
    """A root with ufw configured (22/tcp and 8888/tcp allowed, input policy DROP)."""
    files = {"/etc/ufw/ufw.conf": f"# ufw\nENABLED={enabled_conf}\nLOGLEVEL=low\n",
             "/etc/default/ufw": f'IPV6={ipv6}\nDEFAULT_INPUT_POLICY="DROP"\n',
             "/etc/ufw/user.rules": UFW_RULES, "/etc/ufw/user6.rules": UFW_RULES,
             "/usr/lib/systemd/system/ufw.service": "[Service]\nExecStart=/lib/ufw/ufw-init "
                                                    "start quiet\n"}
    return make_root(files, enabled("ufw.service") if unit else {})


def firewalld_root(make_root, etc_zone: str | None = None, conf: str = "DefaultZone=public\n"):
    """A root with firewalld enabled and its vendor zones and services (``etc_zone``: an
    /etc/firewalld/zones/public.xml over the vendor one)."""
    files = {"/etc/firewalld/firewalld.conf": conf,
             "/usr/lib/systemd/system/firewalld.service": "[Service]\nExecStart=/usr/sbin/"
                                                          "firewalld --nofork\n"}
    for z in ("public", "drop", "trusted"):
        files[f"/usr/lib/firewalld/zones/{z}.xml"] = (FWD / f"{z}.xml").read_text()
    for s in ("ssh", "dhcpv6-client", "http", "https", "prometheus-node-exporter"):
        files[f"/usr/lib/firewalld/services/{s}.xml"] = (FWD / f"{s}.xml").read_text()
    if etc_zone is not None:
        files["/etc/firewalld/zones/public.xml"] = etc_zone
    return make_root(files, enabled("firewalld.service"))


def results(check: str, root, params: dict | None = None, **kw):
    """The results of ``check`` on ``root``, by subject."""
    return {r.subject: r for r in run_check(check, root, params, **kw)}


class FakeCommands(Host):
    """A Host over a fixture root whose commands return canned output."""

    def __init__(self, root, outputs: dict[str, tuple[int, str, str]]) -> None:
        super().__init__(str(root), live=True, allow_commands=True)
        self.outputs = outputs
        self.calls: list[str] = []

    def run(self, argv, *, timeout=None) -> CommandResult:
        key = " ".join(argv)
        self.calls.append(key)
        if key not in self.outputs:
            raise CommandError(f"{argv[0]}: not installed")
        rc, out, err = self.outputs[key]
        return CommandResult(tuple(argv), rc, out, err)


def run_fake(host: Host, check: str, params: dict | None = None) -> dict[str, Any]:
    """The results of ``check`` on ``host``, by subject."""
    from aiaudit.api import CheckContext
    from aiaudit.core import plugins
    from aiaudit.core.ruleset import _with_defaults

    spec = plugins.registry().checks[check]
    ctx = CheckContext(host=host, params=_with_defaults(dict(params or {}),
                                                        spec.params_schema))
    return {r.subject: r for r in spec.run(ctx)}


_PROBE = """
import json, sys
from tests.helpers import run_check
out = {}
for check, params in json.loads(sys.argv[1]):
    out[check + json.dumps(params)] = {r.subject: [r.status.value, r.message]
                                       for r in run_check(check, "/", params, live=True)}
print(json.dumps(out))
"""


def live_results(ns: str, *checks: tuple[str, dict]) -> dict:
    """(status, message) by subject of each (check, params) on / live inside netns ``ns``."""
    out = run_in(ns, sys.executable, "-c", _PROBE, json.dumps(checks))
    return json.loads(out)
