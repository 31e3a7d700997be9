"""What a cluster node must keep admitting: the ruleset's ``settings.firewall.allow_inbound``.

A default-deny firewall that admits only SSH cuts a training node off its cluster (slurmd
listens on 6818, slurmctld on 6817, srun on ``SrunPortRange``; exporters are scraped by the
monitoring host; NCCL, torchrun/c10d, Gloo and MPI open arbitrary ports between nodes).
The firewall checks generate their fix, and judge "only allowed ports", from this list:

``ssh``
    22/tcp from anywhere.
``slurm``
    when the scanned host runs Slurm (a slurm.conf, a slurmd unit or package):
    ``SlurmctldPort`` (default 6817, may be a range), ``SlurmdPort`` (default 6818) and
    ``SrunPortRange`` (when set; without it srun listens on ephemeral ports, which a
    default-deny policy cannot admit: restrict them with ``SrunPortRange``) from
    slurm.conf(5) of the scanned root, all TCP.
``{preset: exporters, from: [CIDR...]}``
    node exporter (9100/tcp) and DCGM exporter (9400/tcp), or ``ports``, from the
    monitoring network only.
``{preset: fabric, from: [CIDR...]}`` or ``{preset: fabric, iif: [IFNAME...]}``
    everything from the trusted cluster fabric (NCCL/MPI/Gloo pick their ports at run time).
``PORT/PROTO`` or ``{ports: [...], from: [...], iif: [...]}``
    any other port, optionally restricted.

Entries with ``from`` or ``iif`` are *restricted*: ``FW-ONLY-ALLOWED-PORTS`` lists them but
does not fail them (as it treats any such rule); the other entries extend its ``allowed``
list.  The default (no settings) is ``[ssh]``.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from aiaudit.core.startup.records import record
from aiaudit.linux.netfilter import model as nf

PRESETS = ("ssh", "slurm", "exporters", "fabric")
EXPORTER_PORTS = ("9100/tcp", "9400/tcp")
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
_IFNAME = r"^[A-Za-z0-9_.:@-]{1,15}$"
_CIDR = r"^[0-9A-Fa-f:.]+(/[0-9]{1,3})?$"

_LIST_OF = {"type": "array", "minItems": 1, "uniqueItems": True}
SCHEMA: dict[str, Any] = {
    "description": ("How the bundle's firewall keeps a node in its cluster "
                    "(aiaudit.linux.netfilter.inbound)."),
    "type": "object", "additionalProperties": False,
    "properties": {
        "allow_inbound": {
            "description": "What new inbound connections the firewall admits: presets "
                           "ssh, slurm (ports from slurm.conf), exporters (from a "
                           "monitoring CIDR), fabric (a trusted CIDR or interface), or "
                           "PORT/PROTO entries.  Default [ssh].",
            "type": "array",
            "items": {"oneOf": [
                {"enum": ["ssh", "slurm"]},
                {"type": "string", "pattern": nf.PORT_SPEC_PATTERN},
                {"type": "object", "additionalProperties": False,
                 "properties": {
                     "preset": {"enum": list(PRESETS)},
                     "ports": {**_LIST_OF, "items": {"type": "string",
                                                     "pattern": nf.PORT_SPEC_PATTERN}},
                     "from": {**_LIST_OF, "items": {"type": "string", "pattern": _CIDR}},
                     "iif": {**_LIST_OF, "items": {"type": "string", "pattern": _IFNAME}},
                     "name": {"type": "string", "pattern": r"^[A-Za-z0-9 _.,:/()-]{1,64}$"},
                 },
                 "anyOf": [{"required": ["preset"]}, {"required": ["ports"]}]},
            ]},
        },
    },
}


@record
class Admit:
    """One thing the firewall admits."""

    label: str
    """Where it comes from (``ssh``, ``slurm (etc/slurm/slurm.conf)``...)."""
    ports: tuple[tuple[str, int, int], ...] = ()
    """``(proto, lo, hi)``; empty with ``everything``."""
    sources: tuple[str, ...] = ()
    """Source networks (normalised CIDRs); empty: any."""
    ifaces: tuple[str, ...] = ()
    """Input interfaces; empty: any."""
    everything: bool = False
    """All protocols and ports (the fabric)."""

    @property
    def restricted(self) -> bool:
        """Admitted only from named sources or interfaces."""
        return bool(self.sources or self.ifaces)

    def text(self) -> str:
        """``22/tcp from anywhere (ssh)``."""
        what = "everything" if self.everything else ", ".join(
            f"{lo}/{p}" if lo == hi else f"{lo}-{hi}/{p}" for p, lo, hi in self.ports)
        where = []
        if self.sources:
            where.append("from " + ", ".join(self.sources))
        if self.ifaces:
            where.append("on " + ", ".join(self.ifaces))
        return f"{what} {' and '.join(where) or 'from anywhere'} ({self.label})"


class SettingsError(ValueError):
    """A value the schema let through but no firewall can carry (a bad CIDR)."""


def _cidrs(values: list[str]) -> tuple[str, ...]:
    if not values:
        return ()
    import ipaddress  # 6 M instructions: only for settings that name networks

    out = []
    for v in values:
        try:
            out.append(str(ipaddress.ip_network(v, strict=False)))
        except ValueError:
            raise SettingsError(f"settings.firewall: {v!r} is not an IP network") from None
    return tuple(out)


def _port_ranges(value: str, default: int) -> list[tuple[str, int, int]]:
    """``6817`` or ``6817-6818`` (slurm.conf); the default when unset or unreadable."""
    m = re.fullmatch(r"\s*([0-9]{1,5})(?:\s*-\s*([0-9]{1,5}))?\s*", value or "")
    if not m:
        return [("tcp", default, default)]
    lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
    if not 0 < lo <= hi <= 65535:
        return [("tcp", default, default)]
    return [("tcp", lo, hi)]


SlurmInfo = Callable[[], "tuple[bool, str | None, Mapping[str, str]]"]
"""``() -> (Slurm present, slurm.conf path or None, {lowercased key: value})``."""


def admits(settings: Mapping[str, Any], slurm: SlurmInfo) -> tuple[list[Admit], list[str]]:
    """What ``settings`` (the ruleset's ``settings``) admits, and notes (a preset that
    admits nothing here, srun on ephemeral ports)."""
    fw = settings.get("firewall") or {}
    out: list[Admit] = []
    notes: list[str] = []
    for e in fw.get("allow_inbound", ["ssh"]):
        if isinstance(e, str):
            e = {"preset": e} if e in PRESETS else {"ports": [e]}
        got = _admit(e, slurm, notes)
        if got is not None:
            out.append(got)
    return out, notes


def _admit(e: Mapping[str, Any], slurm: SlurmInfo, notes: list[str]) -> Admit | None:
    """One ``allow_inbound`` entry (``None``: a Slurm preset where Slurm is absent)."""
    preset = e.get("preset")
    sources = _cidrs(e.get("from", []))
    ifaces = tuple(e.get("iif", []))
    name = e.get("name")
    if preset in ("exporters", "fabric") and not (sources or ifaces):
        raise SettingsError(f"settings.firewall: preset {preset} needs `from` (CIDRs) "
                            "or `iif` (interfaces)")
    ports: list[tuple[str, int, int]] = nf.parse_port_specs(e.get("ports", []))
    label = name or preset or "allow_inbound"
    if preset == "ssh" and not ports:
        ports = [("tcp", 22, 22)]
    elif preset == "slurm":
        present, path, conf = slurm()
        if not present:
            notes.append("slurm: Slurm is not installed on this host, no port admitted")
            return None
        where = path.lstrip("/") if path else "defaults, no slurm.conf"
        label = name or f"slurm, {where}"
        ports = ports or _slurm_ports(conf, notes)
    elif preset == "exporters" and not ports:
        ports = nf.parse_port_specs(list(EXPORTER_PORTS))
    everything = preset == "fabric" and not ports
    return Admit(label, tuple(ports), sources, ifaces, everything)


def _slurm_ports(conf: Mapping[str, str], notes: list[str]) -> list[tuple[str, int, int]]:
    """slurmctld's, slurmd's and srun's ports from slurm.conf (lowercased keys)."""
    ports = [*_port_ranges(conf.get("slurmctldport", ""), SLURMCTLD_PORT),
             *_port_ranges(conf.get("slurmdport", ""), SLURMD_PORT)]
    srun_ports = _port_ranges(conf.get("srunportrange") or "", 0)
    if srun_ports[0][1]:
        ports += srun_ports
    else:
        notes.append("slurm: no SrunPortRange, so srun listens on ephemeral ports a "
                     "default-deny firewall does not admit (set SrunPortRange in "
                     "slurm.conf and rescan)")
    return ports


def any_source_ports(adm: list[Admit]) -> list[tuple[str, int, int]]:
    """The ports admitted from anywhere (extend ``FW-ONLY-ALLOWED-PORTS``'s list)."""
    return [p for a in adm if not a.restricted and not a.everything for p in a.ports]


def _set(items: list[str]) -> str:
    return items[0] if len(items) == 1 else "{ " + ", ".join(items) + " }"


_CONF_HEAD = ("#!/usr/sbin/nft -f",
              "# aiaudit: default-deny input, admitting the ruleset's settings.firewall.",
              "# flush ruleset removes other tables (Docker, Kubernetes) until re-created.",
              "# admits: loopback, established and related connections, ICMP and ICMPv6")
_CONF_INPUT = ("flush ruleset", "", "table inet filter {", "  chain input {",
               "    type filter hook input priority filter; policy drop;",
               '    iif "lo" accept', "    ct state established,related accept",
               "    ct state invalid drop",
               "    meta l4proto { icmp, ipv6-icmp } accept")


def nftables_conf(adm: list[Admit], notes: list[str] | tuple[str, ...] = ()) -> str:
    """A default-deny ``/etc/nftables.conf`` admitting ``adm`` (and loopback, established
    and related traffic, ICMP and ICMPv6), with one ``# admits:`` line per entry."""
    lines = [*_CONF_HEAD,
             *(f"# admits: {a.text()}" for a in adm),
             *(f"# note: {n}" for n in notes),
             *_CONF_INPUT]
    for a in adm:
        lines += _accept_rules(a)
    lines += ["  }", "}", ""]
    return "\n".join(lines)


def _accept_rules(a: Admit) -> list[str]:
    """The input chain's accept rules for one entry: one per source family (and
    protocol), each restricted to its interfaces."""
    out = []
    for m in _where(a):
        if a.everything:
            out.append("    " + " ".join([*m, "accept"]))
            continue
        for proto in ("tcp", "udp"):
            ps = [str(lo) if lo == hi else f"{lo}-{hi}" for p, lo, hi in a.ports if p == proto]
            if ps:
                out.append("    " + " ".join([*m, f"{proto} dport {_set(ps)}", "accept"]))
    return out


def _where(a: Admit) -> list[list[str]]:
    """The interface and source matches of an entry, one list per source family."""
    matches: list[list[str]] = [[]]
    if a.ifaces:
        matches = [[f"iifname {_set([chr(34) + i + chr(34) for i in a.ifaces])}"]]
    if a.sources:
        v4 = [s for s in a.sources if ":" not in s]
        v6 = [s for s in a.sources if ":" in s]
        matches = [[*m, f"{fam} saddr {_set(ss)}"] for m in matches
                   for fam, ss in (("ip", v4), ("ip6", v6)) if ss]
    return matches
