"""The fix the firewall checks propose, for the mechanism in charge: a default-deny input
that admits what the ruleset's ``settings.firewall`` declares (:mod:`.inbound`), with
Slurm's ports read from the scanned root.

nftables (or no firewall at all): ``/etc/nftables.conf`` as a file, ``nftables.service``
enabled (both also work offline) and a live load with a timed rollback that refuses to cut
an SSH session.  ufw and firewalld: their own commands.
"""

from __future__ import annotations

import json
import shlex
from typing import Any, Mapping

from aiaudit.core.errors import HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Remediation, Snippet
from aiaudit.linux.netfilter import inbound
from aiaudit.linux.netfilter.boot import NFTABLES_CONF
from aiaudit.linux.netfilter.explain import ports_text
from aiaudit.linux.netfilter.state import FirewallState
from aiaudit.linux.systemd import units as systemd

Extra = tuple[str, int, int, Any]
"""A port range admitted beyond the allowed ones: ``(proto, lo, hi, decision)``."""


def admitted(host: Host, settings: Mapping[str, Any]) -> tuple[list[inbound.Admit], list[str]]:
    """What the fix admits: the ruleset's ``settings.firewall`` with Slurm's ports read
    from the scanned root (:mod:`aiaudit.linux.netfilter.inbound`).  Once per run and
    settings: every failing subject of both rules proposes the same firewall."""
    def slurm_info() -> tuple[bool, str | None, dict[str, str]]:
        from aiaudit.linux.slurm import slurmd  # only for a slurm preset

        path, conf, _problems = slurmd.slurm_conf(host)
        return slurmd.installed(host), path, {k: v.value for k, v in conf.items()}

    key = ("firewall.admitted", json.dumps(settings.get("firewall"), sort_keys=True))
    return host.memo(key, lambda: inbound.admits(settings, slurm_info))


def remediation(host: Host, settings: Mapping[str, Any], st: FirewallState,
                extra: list[Extra] | None = None) -> Remediation:
    """Fix for the mechanism in charge of ``st``, admitting what the ruleset settings
    declare (and removing ``extra``, the ports admitted beyond them, with ufw and
    firewalld)."""
    try:
        adm, notes = admitted(host, settings)
    except inbound.SettingsError as exc:
        return Remediation(f"No fix proposed: {exc}.")
    what = "; ".join(a.text() for a in adm) or "nothing"
    active = st.active()
    ufw_idle = any(m.name == "ufw" and not m.active and m.reason.startswith("ENABLED=yes")
                   for m in st.mechanisms)
    if "ufw" in active or ufw_idle:
        return _ufw_fix(adm, what, extra or [])
    if "firewalld" in active:
        return _firewalld_fix(adm, what, extra or [])
    return _nftables_fix(host, adm, notes, what, "nftables" in active)


def _ufw_fix(adm: list[inbound.Admit], what: str, extra: list[Extra]) -> Remediation:
    cmds = ["ufw default deny incoming", *_ufw_rules(adm)]
    cmds += [f"ufw delete allow {ports_text(x).replace('-', ':')}" for x in extra]
    return Remediation("ufw is the configured firewall: set a deny-incoming default, allow "
                       f"only {what}, and make sure ufw.service starts at boot "
                       "(ufw.conf's ENABLED=yes alone loads nothing).",
                       (Snippet.command(" && ".join([*cmds, "ufw enable",
                                                     "systemctl enable --now ufw"]),
                                        "ufw: default deny, declared inbound only"),))


def _firewalld_fix(adm: list[inbound.Admit], what: str, extra: list[Extra]) -> Remediation:
    cmds = [f"firewall-cmd --permanent --remove-port={ports_text(x)}" for x in extra]
    cmds += ["firewall-cmd --permanent --set-target=default", *_firewalld_rules(adm),
             "firewall-cmd --reload"]
    return Remediation("firewalld is the active firewall: use a zone whose target rejects "
                       f"(default, DROP or %%REJECT%%) and admit only {what} (remove "
                       "services/ports that open others; see firewalld.zone(5)).",
                       (Snippet.command(" && ".join(cmds), "firewalld default zone"),))


def _nftables_fix(host: Host, adm: list[inbound.Admit], notes: list[str], what: str,
                  nftables_active: bool) -> Remediation:
    conf = inbound.nftables_conf(adm, notes)
    caveat = (" (Docker/Kubernetes add their own tables; `flush ruleset` removes them until "
              "they restart)" if host.live else "")
    first = "Replace" if nftables_active else "No firewall loads at boot: write"
    install: tuple[Snippet, ...] = ()
    try:
        unit = systemd.load_unit(host, "nftables.service")
        manual = "Unmask nftables.service and enable it." if unit.masked else ""
        if not unit.exists and not unit.masked:  # the package ships the unit
            from aiaudit.linux.packages.install import install_and_enable

            # loaded now by the checked, rolled-back load below, not by the unit
            install, manual = install_and_enable(
                host, "nftables", "nftables.service", "install nftables (it ships "
                "nftables.service; the /etc/nftables.conf written above is kept) and load it "
                "at every boot", start=False)
    except (HostError, ParseError) as exc:
        manual = f"Enable nftables.service (its unit cannot be read: {exc})."
    enable = () if manual or install else (
        Snippet.enable("nftables.service", "load it at every boot"),)
    return Remediation(
        f"{first} /etc/nftables.conf with a default-deny input policy admitting only {what} "
        f"(settings.firewall.allow_inbound), enable nftables.service and load it{caveat}.",
        (Snippet.file(NFTABLES_CONF, conf, "default-deny input admitting the declared "
                      "inbound set (merge with rules you need: it flushes the ruleset)"),
         *install, *enable,
         Snippet.apply(f"nftables {_tcp_ports(adm)}".rstrip(),
                       "check and load it now, with a timed rollback")), manual=manual)


def _tcp_ports(adm: list[inbound.Admit]) -> str:
    """TCP ports admitted from anywhere, ``22,6817-6818`` (an SSH session must use one)."""
    return ",".join(str(lo) if lo == hi else f"{lo}-{hi}"
                    for p, lo, hi in inbound.any_source_ports(adm) if p == "tcp")


def _ufw_rules(adm: list[inbound.Admit]) -> list[str]:
    out = []
    for a in adm:
        for src in a.sources or ("any",):
            for iif in a.ifaces or ("",):
                on = f"in on {iif} " if iif else ""
                if a.everything:
                    out.append(f"ufw allow {on}from {src}")
                    continue
                for p, lo, hi in a.ports:
                    port = str(lo) if lo == hi else f"{lo}:{hi}"
                    out.append(f"ufw allow {on}from {src} to any port {port} proto {p}")
    return out


def _firewalld_rules(adm: list[inbound.Admit]) -> list[str]:
    out = []
    for a in adm:
        ports = [f"{lo}{'' if lo == hi else f'-{hi}'}/{p}" for p, lo, hi in a.ports]
        for iif in a.ifaces:
            out.append(f"firewall-cmd --permanent --zone=trusted --add-interface={iif}")
        for src in a.sources:
            fam = "ipv6" if ":" in src else "ipv4"
            if a.everything:
                out.append(f"firewall-cmd --permanent --zone=trusted --add-source={src}")
            for spec in ports:
                port, _, proto = spec.partition("/")
                out.append(shlex.join(["firewall-cmd", "--permanent", "--add-rich-rule",
                                       f"rule family={fam} source address={src} port "
                                       f"port={port} protocol={proto} accept"]))
        if not a.restricted:
            out += [f"firewall-cmd --permanent --add-port={spec}" for spec in ports]
    return out
