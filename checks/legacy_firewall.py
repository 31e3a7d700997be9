"""Host firewall: default-deny input, and only the allowed ports admitted.

Running state (live scan of ``/``): ``nft -j list ruleset`` (every nf_tables table,
iptables-nft's included; for those, ``iptables-save`` is parsed instead when nft shows
untranslated ``xt`` matches) plus iptables-legacy rules, which ``nft`` cannot see but the
kernel enforces (``iptables -V`` says which backend; ``iptables-legacy-save``).

Boot configuration (live and offline): what the enabled services load: ``nftables.service``
(the file of its ``ExecStart=nft -f FILE``, ``/etc/nftables.conf`` on Debian, with
``include``), ufw (``ENABLED=yes`` in ``/etc/ufw/ufw.conf`` *and* ``ufw.service`` enabled;
``DEFAULT_INPUT_POLICY``; ``user.rules``/``user6.rules`` tuples), firewalld
(``firewalld.service`` enabled; ``DefaultZone`` from ``/etc/firewalld/firewalld.conf``, the
zone from ``/etc/firewalld/zones`` over ``/usr/lib/firewalld/zones``, services mapped to
ports), ``/etc/iptables/rules.v4``/``rules.v6`` with ``netfilter-persistent`` enabled, and
RHEL's ``/etc/sysconfig/iptables``/``ip6tables`` with ``iptables.service``/``ip6tables.service``.
Several mechanisms load into the same kernel: their chains are evaluated together (a drop
in any is final).  The decision follows :mod:`aiaudit.linux.netfilter.model`.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import field
from typing import Any, Iterator

from aiaudit.api import (
    Aspect,
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.core.errors import CommandError, HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.records import record
from aiaudit.linux.netfilter import inbound, nft
from aiaudit.linux.netfilter import iptables as ipt
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.slurm import slurmd as slurm_check
from aiaudit.linux.systemd import units as systemd

NFT_TIMEOUT = 10.0
NFTABLES_CONF = "/etc/nftables.conf"
NFT_INCLUDE_DIR = "/etc"
"""nft's default include directory on Debian builds (``DEFAULT_INCLUDE_PATH``)."""


# ================================================================== loading
@record(frozen=False)
class Mechanism:
    """One firewall mechanism and whether it shapes the state being judged."""

    name: str
    active: bool
    reason: str
    evidence: list[Evidence] = field(default_factory=list)


@record(frozen=False)
class FirewallState:
    """A ruleset with the mechanisms that produced it."""

    ruleset: nf.Ruleset | None
    """``None`` when it could not be determined (see ``problems``)."""
    mechanisms: list[Mechanism] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    running: bool = False
    """The kernel's current ruleset (commands), not the boot configuration."""
    looked: list[Evidence] = field(default_factory=list)
    """What was looked at for the mechanisms that load nothing: a unit file installed but
    not enabled, and (``default`` evidence) where a mechanism that is not installed was
    looked for.  Shown only when no mechanism is active: then it is what decided."""

    def active(self) -> list[str]:
        """Names of the active mechanisms."""
        return [m.name for m in self.mechanisms if m.active]


def load_running(host: Host) -> FirewallState:
    """The ruleset the kernel enforces now (commands; live scan of / only)."""
    st = FirewallState(nf.Ruleset(), running=True)
    assert st.ruleset is not None
    try:
        res = host.run(["nft", "-j", "list", "ruleset"], timeout=NFT_TIMEOUT)
    except CommandError as exc:
        if "not installed" not in str(exc):
            st.problems.append(str(exc))
        else:
            st.looked.append(Evidence.default("nft -j list ruleset", "nft is not installed"))
        res = None
    if res is not None:
        if res.returncode != 0:
            err = res.stderr.strip() or f"exit status {res.returncode}"
            hint = " (needs root / CAP_NET_ADMIN)" if "ermission" in err or \
                "not permitted" in err else ""
            st.problems.append(f"nft -j list ruleset: {err}{hint}")
        else:
            try:
                st.ruleset = nft.parse_json(res.stdout)
                st.mechanisms.append(Mechanism("nftables", True, "nft -j list ruleset",
                                               [Evidence.command("nft -j list ruleset")]))
            except ParseError as exc:
                st.problems.append(str(exc))
    rs = st.ruleset
    if rs is None:
        return st
    loaded_any = any(_legacy_tables(host, fam) for fam in (4, 6))
    if not rs.xt_tables and not loaded_any:
        # whatever backend `iptables` has, nothing below would run: skip `iptables -V`
        return st
    try:
        ver = host.run(["iptables", "-V"], timeout=NFT_TIMEOUT).stdout.strip()
    except CommandError:
        ver = ""
    kind = ipt.variant(ver)
    legacy_cmds: list[tuple[str, int]] = []
    if kind == "legacy":
        legacy_cmds = [("iptables-save", 4), ("ip6tables-save", 6)]
    elif kind == "nf_tables":
        legacy_cmds = [("iptables-legacy-save", 4), ("ip6tables-legacy-save", 6)]
        # iptables-nft rules with extensions nft cannot translate show as "xt": parse
        # iptables-save (nft backend) for those tables instead.
        for cmd, fam in (("iptables-save", 4), ("ip6tables-save", 6)):
            famname = "ip" if fam == 4 else "ip6"
            tables = {t for (f, t) in rs.xt_tables if f == famname}
            if not tables:
                continue
            got = _run_save(host, cmd, fam, st)
            if got is None:
                continue
            for key in [k for k in rs.chains if k[0] == famname and k[1] in tables]:
                del rs.chains[key]
            for key, ch in got.chains.items():
                if key[1] in tables:
                    rs.chains[key] = ch
            st.notes.append(f"{cmd}: used for iptables-nft table(s) {', '.join(sorted(tables))}")
    for cmd, fam in legacy_cmds:
        if not _legacy_tables(host, fam):
            # No legacy table is registered in this netns; running *-legacy-save would
            # only autoload the ip_tables module (a side effect an audit must not have).
            continue
        got = _run_save(host, cmd, fam, st)
        if got is None or not any(c.rules or c.policy == "drop" for c in got.chains.values()):
            continue
        for ch in got.chains.values():
            ch.origin = "iptables-legacy"
        rs.merge(got)
        st.mechanisms.append(Mechanism("iptables-legacy", True,
                                       f"{cmd} (iptables-legacy rules, invisible to nft)",
                                       [Evidence.command(cmd)]))
    return st


def _legacy_tables(host: Host, fam: int) -> list[str]:
    """Legacy (x_tables) tables registered in this netns: ``/proc/net/ip{,6}_tables_names``."""
    try:
        return host.read_text(f"/proc/net/ip{'6' if fam == 6 else ''}_tables_names").split()
    except HostError:
        return []


def _run_save(host: Host, cmd: str, fam: int, st: FirewallState) -> nf.Ruleset | None:
    try:
        res = host.run([cmd], timeout=NFT_TIMEOUT)
    except CommandError as exc:
        if "not installed" not in str(exc):
            st.problems.append(str(exc))
        return None
    if res.returncode != 0:
        st.problems.append(f"{cmd}: {res.stderr.strip() or res.returncode}")
        return None
    try:
        return ipt.parse(res.stdout, fam, cmd)
    except ParseError as exc:
        st.problems.append(str(exc))
        return None


def running(host: Host) -> FirewallState:
    """:func:`load_running`, once per run."""
    return host.memo(("fw-running",), lambda: load_running(host))


def _nft_file(host: Host) -> tuple[str, Evidence | None]:
    """The file nftables.service loads (``ExecStart=... -f FILE``), else the default."""
    try:
        unit = systemd.load_unit(host, "nftables.service")
    except (HostError, ParseError):
        return NFTABLES_CONF, None
    a = unit.get("Service", "ExecStart")
    if a is not None:
        try:
            argv = shlex.split(a.value.lstrip("-@:+!"))
        except ValueError:
            argv = []
        for i, arg in enumerate(argv):
            if arg in ("-f", "--file") and i + 1 < len(argv):
                return argv[i + 1], Evidence.file(a.file, a.line, a.value)
    return NFTABLES_CONF, None


def _resolver(host: Host) -> nft.Resolver:
    def resolve(pattern: str, including: str) -> list[tuple[str, str]]:
        # nft searches a relative name in its include path only (-I, then /etc), not
        # beside the including file nor in the working directory (checked with nft 1.0.6).
        cands = [pattern] if pattern.startswith("/") else [f"{NFT_INCLUDE_DIR}/{pattern}"]
        for cand in cands:
            if any(c in cand for c in "*?["):
                paths = host.glob(cand)
                if paths:
                    return [(p, host.read_text(p)) for p in paths if host.is_file(p)]
                continue
            if host.exists(cand):
                return [(cand, host.read_text(cand))]
        if any(c in pattern for c in "*?["):
            return []  # nft: a glob matching nothing is not an error
        raise ParseError(f"include {pattern!r}: no such file", source=including)
    return resolve


def _not_installed(what: str, files: tuple[str, ...], units: tuple[str, ...] = ()
                   ) -> Evidence:
    """``default`` evidence: mechanism ``what`` was looked for as ``files`` and ``units``
    (on the systemd unit search path) and none of them is there."""
    parts = [f.lstrip("/") for f in files]
    if units:
        parts.append(f"unit {systemd.search_text(units)}")
    return Evidence.default(f"{what}: {', '.join(parts)}", "not installed")


def _unit_looked(host: Host, st: FirewallState, what: str, unit: str,
                 en: systemd.Enablement, files: tuple[str, ...] = ()) -> None:
    """Record for a mechanism that loads nothing why its ``unit`` does not start it: the
    unit file installed but not enabled, else where it was looked for (with ``files``, the
    mechanism's configuration that is not there either)."""
    if en.evidence:
        return  # the mask link is the mechanism's own evidence
    uev = systemd.unit_evidence(host, unit, en)
    if uev.kind == "file":
        st.looked.append(uev)
        if files:
            st.looked.append(_not_installed(what, files))
    else:
        st.looked.append(_not_installed(what, files, (unit,)))


def _load_nftables(host: Host, st: FirewallState, rs: nf.Ruleset) -> None:
    en = systemd.is_enabled(host, "nftables.service")
    path, exec_ev = _nft_file(host)
    ev = [e for e in (exec_ev,) if e is not None]
    if en.evidence:
        ev.append(Evidence.file(en.evidence, None, en.reason))
    if not en.enabled:
        if host.exists(path):
            st.notes.append(f"{path} exists but nothing loads it at boot "
                            f"(nftables.service {'is masked' if en.masked else 'is not enabled'})")
            st.looked.append(Evidence.file(path, None, "nothing loads it at boot"))
            _unit_looked(host, st, "nftables", "nftables.service", en)
        else:
            _unit_looked(host, st, "nftables", "nftables.service", en, (path,))
        st.mechanisms.append(Mechanism("nftables", False, en.reason, ev))
        return
    try:
        text = host.read_text(path)
        got = nft.parse_text(text, path, _resolver(host))
    except NotFound:
        st.mechanisms.append(Mechanism("nftables", False,
                                       f"nftables.service is enabled but {path} is missing", ev))
        return
    except (HostError, ParseError) as exc:
        st.problems.append(f"{exc} (nft -f would refuse the file and load nothing)")
        st.mechanisms.append(Mechanism("nftables", True, "enabled, file unreadable", ev))
        return
    st.mechanisms.append(Mechanism("nftables", True, f"{en.reason}; loads {path}",
                                   [Evidence.file(path), *ev]))
    rs.merge(got)


def _load_ufw(host: Host, st: FirewallState, rs: nf.Ruleset) -> None:
    conf_path, default_path = "/etc/ufw/ufw.conf", "/etc/default/ufw"
    text = host.try_read_text(conf_path)
    if text is None:
        st.looked.append(_not_installed("ufw", (conf_path,)))
        return
    from aiaudit.linux.netfilter import ufw  # only where ufw is installed

    conf = ufw.parse_conf(text)
    en = systemd.is_enabled(host, "ufw.service")
    enabled = conf.get("ENABLED")
    ev = [Evidence.file(conf_path, enabled.line if enabled else None,
                        f"ENABLED={enabled.value}" if enabled else "ENABLED not set")]
    if en.evidence:
        ev.append(Evidence.file(en.evidence, None, en.reason))
    if enabled is None or enabled.value.lower() != "yes":
        st.mechanisms.append(Mechanism("ufw", False, "ENABLED is not yes in ufw.conf", ev))
        return
    if not en.enabled:
        _unit_looked(host, st, "ufw", "ufw.service", en)
        st.mechanisms.append(Mechanism("ufw", False, "ENABLED=yes but ufw.service is not "
                                       f"enabled ({en.reason}): nothing loads it at boot", ev))
        st.notes.append("ufw: ENABLED=yes but ufw.service is not enabled")
        return
    defaults = ufw.parse_conf(host.try_read_text(default_path) or "")
    pol = defaults.get("DEFAULT_INPUT_POLICY")
    ipv6 = defaults.get("IPV6")
    rules = []
    for fam, path in ((4, "/etc/ufw/user.rules"), (6, "/etc/ufw/user6.rules")):
        if fam == 6 and (ipv6 is None or ipv6.value.lower() != "yes"):
            st.notes.append("ufw: IPV6 is not yes in /etc/default/ufw, IPv6 is not filtered")
            continue
        try:
            rules.append((fam, path, ufw.parse_tuples(host.try_read_text(path) or "", path)))
        except (HostError, ParseError) as exc:
            st.problems.append(str(exc))
    got = ufw.to_ruleset(pol.value if pol else "DROP", default_path,
                         pol.line if pol else None, rules)
    if pol is None:
        for ch in got.chains.values():
            ch.source = None
    st.mechanisms.append(Mechanism("ufw", True, f"ENABLED=yes and {en.reason}", ev))
    rs.merge(got)


def _first(host: Host, name: str, dirs: tuple[str, ...]) -> str | None:
    for d in dirs:
        if host.is_file(f"{d}/{name}"):
            return f"{d}/{name}"
    return None


_FWD_ZONES = ("/etc/firewalld/zones", "/usr/lib/firewalld/zones")
_FWD_SERVICES = ("/etc/firewalld/services", "/usr/lib/firewalld/services")


def _load_firewalld(host: Host, st: FirewallState, rs: nf.Ruleset) -> None:
    en = systemd.is_enabled(host, "firewalld.service")
    conf_path = "/etc/firewalld/firewalld.conf"
    ev = [Evidence.file(en.evidence, None, en.reason)] if en.evidence else []
    if not en.enabled:
        if host.exists(conf_path):
            st.mechanisms.append(Mechanism("firewalld", False, en.reason, ev))
            _unit_looked(host, st, "firewalld", "firewalld.service", en)
        else:
            _unit_looked(host, st, "firewalld", "firewalld.service", en, (conf_path,))
        return
    from aiaudit.linux.netfilter import firewalld as fwd  # only where firewalld starts at boot
    from aiaudit.linux.netfilter import ufw  # its KEY=value reader, for firewalld.conf

    conf = ufw.parse_conf(host.try_read_text(conf_path) or "")
    dz = conf.get("DefaultZone")
    zone_name = dz.value if dz else "public"
    if dz:
        ev.append(Evidence.file(conf_path, dz.line, f"DefaultZone={dz.value}"))
    else:
        ev.append(Evidence.default("firewalld DefaultZone", "public"))
    zpath = _first(host, f"{zone_name}.xml", _FWD_ZONES)
    if zpath is None:
        st.problems.append(f"firewalld: default zone {zone_name!r} has no definition in "
                           + " or ".join(_FWD_ZONES))
        st.mechanisms.append(Mechanism("firewalld", True, en.reason, ev))
        return
    try:
        zone = fwd.parse_zone(host.read_text(zpath), zone_name, zpath)
        services: dict[str, tuple[str, fwd.Service] | None] = {}
        for e in zone.services:
            sname = e.attrs["name"]
            spath = _first(host, f"{sname}.xml", _FWD_SERVICES)
            services[sname] = None if spath is None else \
                (spath, fwd.parse_service(host.read_text(spath), spath))
    except (HostError, ParseError) as exc:
        st.problems.append(str(exc))
        st.mechanisms.append(Mechanism("firewalld", True, en.reason, ev))
        return
    ev.append(Evidence.file(zpath, zone.target_line, f'target="{zone.target}"'))
    st.mechanisms.append(Mechanism("firewalld", True, f"{en.reason}; default zone "
                                   f"{zone_name} ({zpath})", ev))
    if zpath.startswith("/etc/"):
        st.notes.append(f"firewalld: {zpath} overrides the vendor zone")
    for other in host.glob("/etc/firewalld/zones/*.xml"):
        oname = other.rsplit("/", 1)[1][:-4]
        if oname == zone_name:
            continue
        try:
            oz = fwd.parse_zone(host.read_text(other), oname, other)
        except (HostError, ParseError) as exc:
            st.notes.append(f"firewalld: {exc}")
            continue
        if oz.interfaces or oz.sources:
            st.notes.append(f"firewalld: zone {oname} ({other}) is bound to "
                            + ", ".join(oz.interfaces + oz.sources)
                            + " and is not evaluated; only the default zone is")
    rs.merge(fwd.to_ruleset(zone, services))


IPTABLES_SERVICES = (
    ("iptables-persistent", "netfilter-persistent.service",
     ((4, "/etc/iptables/rules.v4"), (6, "/etc/iptables/rules.v6"))),
    # RHEL iptables-services (UNCONFIRMED: SEMANTICS 6.2): one unit per family
    ("iptables-services", "iptables.service", ((4, "/etc/sysconfig/iptables"),)),
    ("iptables-services", "ip6tables.service", ((6, "/etc/sysconfig/ip6tables"),)),
)
"""(mechanism, unit, [(family, iptables-restore file)]) loaded at boot when enabled."""


def _load_iptables_persistent(host: Host, st: FirewallState, rs: nf.Ruleset) -> None:
    absent: dict[str, list[str]] = {}
    for mech, unit, files in IPTABLES_SERVICES:
        present = [(f, p) for f, p in files if host.exists(p)]
        if not present:
            absent.setdefault(mech, []).extend(p for _, p in files)
            continue
        en = systemd.is_enabled(host, unit)
        ev = [Evidence.file(en.evidence, None, en.reason)] if en.evidence else []
        if not en.enabled:
            st.mechanisms.append(Mechanism(mech, False, en.reason, ev))
            _unit_looked(host, st, mech, unit, en)
            continue
        for fam, path in present:
            try:
                rs.merge(ipt.parse(host.read_text(path), fam, path))
                ev.append(Evidence.file(path))
            except (HostError, ParseError) as exc:
                st.problems.append(str(exc))
        st.mechanisms.append(Mechanism(mech, True, en.reason, ev))
    st.looked += [_not_installed(mech, tuple(paths)) for mech, paths in absent.items()]


def load_boot(host: Host) -> FirewallState:
    """The ruleset the enabled firewall services load at boot."""
    rs = nf.Ruleset()
    st = FirewallState(rs)
    for loader in (_load_nftables, _load_ufw, _load_firewalld, _load_iptables_persistent):
        loader(host, st, rs)
    if len(st.active()) > 1:
        st.notes.append("several firewall mechanisms load at boot ("
                        + ", ".join(st.active()) + "); a `flush ruleset` in one can remove "
                        "the others' rules depending on start order")
    return st


def boot(host: Host) -> FirewallState:
    """:func:`load_boot`, once per run."""
    return host.memo(("fw-boot",), lambda: load_boot(host))


# ================================================================== evaluation
@record
class Evaluation:
    """What one address family's input path does."""

    family: int
    chains: tuple[nf.Chain, ...]
    default: dict[str, nf.Decision]
    """Decision for a port no rule names, per protocol (``tcp``, ``udp``)."""
    admitted: tuple[tuple[str, int, int, nf.Decision], ...]
    """Ports named by rules (or allowed) that new connections reach (accept or maybe)."""
    restricted: tuple[tuple[str, int, int, nf.Decision], ...] = ()
    """Ports only connections from a named source or interface reach."""


def evaluate(rs: nf.Ruleset, family: int, allowed: list[tuple[str, int, int]]
             ) -> Evaluation:
    """Probe the default and every port a rule names."""
    default = {}
    for proto in ("tcp", "udp"):
        port = nf.sentinel_port(rs, proto, {p for pr, lo, hi in allowed if pr == proto
                                            for p in (lo, hi)})
        default[proto] = nf.decide(rs, nf.Probe(family, proto, port))
    probes: set[tuple[str, int, int]] = set()
    for proto, lo, hi in rs.ports_mentioned() | set(allowed):
        if proto in ("tcp", "udp"):
            probes.add((proto, lo, hi))
    admitted = []
    restricted = []
    for proto, lo, hi in sorted(probes):
        d = nf.decide(rs, nf.Probe(family, proto, lo))
        if d.outcome is not nf.Outcome.DROP:
            admitted.append((proto, lo, hi, d))
            continue
        dr = nf.decide(rs, nf.Probe(family, proto, lo, restricted=True))
        if dr.outcome is not nf.Outcome.DROP:
            restricted.append((proto, lo, hi, dr))
    return Evaluation(family, tuple(rs.input_chains(family)), default, tuple(admitted),
                      tuple(restricted))


def _decider_evidence(d: nf.Decision) -> list[Evidence]:
    out = []
    for chain, rule in d.deciders[:6]:
        if rule is None:
            what = f"{chain.describe()}: policy {chain.policy}"
            if chain.source and chain.source.startswith("/"):
                out.append(Evidence.file(chain.source, chain.policy_line, what))
            else:
                out.append(Evidence.command(chain.source or chain.origin, what))
        elif rule.source and rule.source.startswith("/"):
            out.append(Evidence.file(rule.source, rule.line, rule.text))
        else:
            out.append(Evidence.command(rule.source or chain.origin,
                                        f"{chain.describe()}: {rule.text}"))
    return out


def _decider_text(d: nf.Decision) -> str:
    parts = []
    for chain, rule in d.deciders[:3]:
        if rule is None:
            loc = f" ({chain.source.lstrip('/')}:{chain.policy_line})" \
                if chain.source and chain.source.startswith("/") and chain.policy_line else ""
            parts.append(f"{chain.describe()} policy {chain.policy}{loc}")
        else:
            loc = f"{rule.source.lstrip('/')}:{rule.line}" if rule.source and \
                rule.source.startswith("/") and rule.line else (rule.source or chain.origin)
            parts.append(f"{rule.text!r} in {chain.describe()} ({loc})")
    return "; ".join(parts)


def _ports_text(p: tuple[str, int, int, Any]) -> str:
    return f"{p[1]}/{p[0]}" if p[1] == p[2] else f"{p[1]}-{p[2]}/{p[0]}"


# ================================================================== remediation
def admitted(ctx: CheckContext) -> tuple[list[inbound.Admit], list[str]]:
    """What the fix admits: the ruleset's ``settings.firewall`` with Slurm's ports read
    from the scanned root (:mod:`aiaudit.linux.netfilter.inbound`)."""
    def slurm_info() -> tuple[bool, str | None, dict[str, str]]:
        path, conf, _problems = slurm_check.slurm_conf(ctx.host)
        return (slurm_check.installed(ctx.host), path,
                {k: v.value for k, v in conf.items()})
    # once per run: every failing subject of both rules proposes the same firewall
    key = ("firewall.admitted", json.dumps(ctx.settings.get("firewall"), sort_keys=True))
    return ctx.host.memo(key, lambda: inbound.admits(ctx.settings, slurm_info))


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


def _remediation(ctx: CheckContext, st: FirewallState,
                 extra: list[tuple[str, int, int, Any]] | None = None) -> Remediation:
    """Fix for the mechanism in charge, admitting what the ruleset settings declare.
    nftables (or no firewall): the ruleset as a file, the unit enabled (both also work
    offline), and a live load with a timed rollback that refuses to cut an SSH session."""
    try:
        adm, notes = admitted(ctx)
    except inbound.SettingsError as exc:
        return Remediation(f"No fix proposed: {exc}.")
    what = "; ".join(a.text() for a in adm) or "nothing"
    active = st.active()
    ufw_idle = any(m.name == "ufw" and not m.active and m.reason.startswith("ENABLED=yes")
                   for m in st.mechanisms)
    if "ufw" in active or ufw_idle:
        cmds = ["ufw default deny incoming", *_ufw_rules(adm)]
        cmds += [f"ufw delete allow {_ports_text(x).replace('-', ':')}" for x in extra or ()]
        return Remediation("ufw is the configured firewall: set a deny-incoming default, allow "
                           f"only {what}, and make sure ufw.service starts at boot "
                           "(ufw.conf's ENABLED=yes alone loads nothing).",
                           (Snippet.command(" && ".join([*cmds, "ufw enable",
                                                         "systemctl enable --now ufw"]),
                                            "ufw: default deny, declared inbound only"),))
    if "firewalld" in active:
        cmds = [f"firewall-cmd --permanent --remove-port={_ports_text(x)}" for x in extra or ()]
        cmds += ["firewall-cmd --permanent --set-target=default", *_firewalld_rules(adm),
                 "firewall-cmd --reload"]
        return Remediation("firewalld is the active firewall: use a zone whose target rejects "
                           f"(default, DROP or %%REJECT%%) and admit only {what} (remove "
                           "services/ports that open others; see firewalld.zone(5)).",
                           (Snippet.command(" && ".join(cmds), "firewalld default zone"),))
    conf = inbound.nftables_conf(adm, notes)
    caveat = (" (Docker/Kubernetes add their own tables; `flush ruleset` removes them until "
              "they restart)" if ctx.host.live else "")
    first = "Replace" if "nftables" in active else "No firewall loads at boot: write"
    try:
        unit = systemd.load_unit(ctx.host, "nftables.service")
        manual = "" if unit.exists else (
            "Unmask nftables.service and enable it." if unit.masked else
            "Install the nftables package (it ships nftables.service), then run "
            "`systemctl enable nftables.service`.")
    except (HostError, ParseError) as exc:
        manual = f"Enable nftables.service (its unit cannot be read: {exc})."
    enable = () if manual else (Snippet.enable("nftables.service", "load it at every boot"),)
    return Remediation(
        f"{first} /etc/nftables.conf with a default-deny input policy admitting only {what} "
        f"(settings.firewall.allow_inbound), enable nftables.service and load it{caveat}.",
        (Snippet.file(NFTABLES_CONF, conf, "default-deny input admitting the declared "
                      "inbound set (merge with rules you need: it flushes the ruleset)"),
         *enable,
         Snippet.apply(f"nftables {_tcp_ports(adm)}".rstrip(),
                       "check and load it now, with a timed rollback")), manual=manual)


# ================================================================== checks
_FAMILY_SCHEMA = {"type": "boolean", "default": True,
                  "description": "also judge IPv6 (skip when the host has IPv6 off)"}
DEFAULT_DENY_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {"ipv6": _FAMILY_SCHEMA},
}
ALLOWED_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "allowed": {"type": "array", "items": {"type": "string",
                                               "pattern": nf.PORT_SPEC_PATTERN},
                    "default": ["22/tcp"],
                    "description": "ports the firewall may admit (22/tcp, 60000-61000/udp)"},
        "ipv6": _FAMILY_SCHEMA,
        "include_restricted": {
            "type": "boolean", "default": False,
            "description": "also fail for ports admitted only from named sources or "
                           "interfaces (ip saddr 10.0.0.0/8, iifname eth1); by default they "
                           "are listed in the message only"},
    },
}


def _ipv6_off(host: Host) -> str | None:
    if not host.live:
        return None
    if not host.exists("/proc/net/if_inet6"):
        return "IPv6 is not available on this kernel (/proc/net/if_inet6 absent)"
    try:
        if host.read_text("/proc/sys/net/ipv6/conf/all/disable_ipv6").strip() == "1" and \
                host.read_text("/proc/sys/net/ipv6/conf/default/disable_ipv6").strip() == "1":
            return "IPv6 is disabled (net.ipv6.conf.all/default.disable_ipv6 = 1)"
    except HostError:
        pass
    return None


def _states(host: Host) -> list[tuple[str, Aspect, FirewallState]]:
    out = []
    if host.live and host.allow_commands:
        out.append(("running", Aspect.RUNTIME, running(host)))
    out.append(("boot", Aspect.PERSISTED, boot(host)))
    return out


def _notes(st: FirewallState) -> str:
    """Notes for a message, including DNAT rules that bypass the input hook."""
    notes = list(st.notes)
    if st.ruleset is not None and st.ruleset.dnat:
        first = st.ruleset.dnat[0]
        more = f" and {len(st.ruleset.dnat) - 1} more" if len(st.ruleset.dnat) > 1 else ""
        notes.append(f"DNAT/REDIRECT rules forward connections that never reach the input "
                     f"hook, so input filtering does not cover them (filter them in the "
                     f"forward hook, e.g. Docker's DOCKER-USER chain): {first}{more}")
    return "".join(f" Note: {n}." for n in notes)


def _mech_evidence(st: FirewallState) -> list[Evidence]:
    """The mechanisms' evidence; when none is active, also what was looked at for them."""
    out = [e for m in st.mechanisms for e in m.evidence]
    return out if st.active() else out + st.looked


def _mech_text(st: FirewallState) -> str:
    if st.running:
        return "running ruleset read with " + (", ".join(m.reason for m in st.mechanisms)
                                               or "no command")
    act = st.active()
    if act:
        return "decided by " + ", ".join(act)
    inactive = "; ".join(f"{m.name}: {m.reason}" for m in st.mechanisms)
    return "no firewall mechanism is active" + (f" ({inactive})" if inactive else "")


def _common(ctx: CheckContext, allowed: list[tuple[str, int, int]]
            ) -> Iterator[tuple[str, Aspect, FirewallState, Evaluation] | Result]:
    """Per state and address family: a skip/error result, or the evaluation to judge."""
    host = ctx.host
    v6off = _ipv6_off(host) if ctx.params["ipv6"] else "not judged (ipv6: false)"
    for label, aspect, st in _states(host):
        for fam in (4, 6):
            subject = f"ipv{fam} ({label})"
            if fam == 6 and v6off:
                yield Result(Status.SKIP, subject, v6off, aspect=aspect)
                continue
            if st.problems or st.ruleset is None:
                yield Result(Status.ERROR, subject, "cannot determine the "
                             f"{'running' if label == 'running' else 'boot'} firewall: "
                             + "; ".join(st.problems), aspect=aspect,
                             evidence=tuple(_mech_evidence(st)))
                continue
            assert st.ruleset is not None
            yield label, aspect, st, evaluate(st.ruleset, fam, allowed)


def run_default_deny(ctx: CheckContext) -> Iterator[Result]:
    """A firewall drops new inbound connections to ports no rule admits."""
    for item in _common(ctx, []):
        if isinstance(item, Result):
            yield item
            continue
        label, aspect, st, ev = item
        fam = ev.family
        notes = _notes(st)
        evidence = _mech_evidence(st)
        subject = f"ipv{fam} ({label})"
        if not ev.chains:
            yield Result(Status.FAIL, subject,
                         f"no IPv{fam} input filter: no base chain on the input hook "
                         f"({_mech_text(st)}).{notes}", expected="default deny",
                         actual="no input filtering", aspect=aspect, evidence=tuple(evidence),
                         remediation=_remediation(ctx, st))
            continue
        bad = {p: d for p, d in ev.default.items() if d.outcome is not nf.Outcome.DROP}
        for d in (bad or ev.default).values():
            evidence.extend(_decider_evidence(d))
        chains = ", ".join(c.describe() for c in ev.chains)
        if not bad:
            d = ev.default["tcp"]
            yield Result(Status.PASS, subject,
                         f"IPv{fam} input is default-deny: {_decider_text(d)} "
                         f"({_mech_text(st)}; chains {chains}).{notes}",
                         expected="default deny", actual="drop", aspect=aspect,
                         evidence=tuple(evidence))
            continue
        why = "; ".join(f"{p}: {d.outcome} by {_decider_text(d)}" for p, d in bad.items())
        yield Result(Status.FAIL, subject,
                     f"IPv{fam} input is not default-deny: a new connection to an unlisted "
                     f"port is not dropped ({why}; {_mech_text(st)}).{notes}",
                     expected="default deny", actual="; ".join(
                         f"{p} {d.outcome}" for p, d in bad.items()),
                     aspect=aspect, evidence=tuple(evidence),
                     remediation=_remediation(ctx, st))


def run_allowed_ports(ctx: CheckContext) -> Iterator[Result]:
    """The firewall admits new inbound connections only to the allowed ports."""
    specs = list(ctx.params["allowed"])
    try:
        declared = inbound.any_source_ports(admitted(ctx)[0])
    except inbound.SettingsError as exc:
        yield Result(Status.ERROR, "settings", f"{exc}")
        return
    # the ports the ruleset's settings.firewall declares are allowed too (one source of truth
    # for the check and the fix it proposes)
    for p, lo, hi in declared:
        spec = f"{lo}/{p}" if lo == hi else f"{lo}-{hi}/{p}"
        if spec not in specs:
            specs.append(spec)
    allowed = nf.parse_port_specs(specs)
    want = ", ".join(specs) or "nothing"
    for item in _common(ctx, allowed):
        if isinstance(item, Result):
            yield item
            continue
        label, aspect, st, ev = item
        fam = ev.family
        subject = f"ipv{fam} ({label})"
        evidence = _mech_evidence(st)
        open_default = [p for p, d in ev.default.items() if d.outcome is not nf.Outcome.DROP]
        def beyond(items: tuple[tuple[str, int, int, nf.Decision], ...]) -> list:
            return [a for a in items if not (nf.port_allowed(allowed, a[0], a[1]) and
                                             nf.port_allowed(allowed, a[0], a[2]))]

        extra = beyond(ev.admitted)
        limited = beyond(ev.restricted)
        if ctx.params["include_restricted"]:
            extra, limited = extra + limited, []
        rnote = _notes(st)
        if limited:
            rnote += (" Admitted only from named sources or interfaces (not judged; "
                     "include_restricted: true to fail them): "
                     + "; ".join(f"{_ports_text(a)} by {_decider_text(a[3])}"
                                 for a in limited) + ".")
        for a in extra:
            evidence.extend(_decider_evidence(a[3]))
        if not ev.chains or open_default:
            what = "every port" if not ev.chains else \
                f"every unlisted {'/'.join(open_default)} port"
            maybe = [d for p, d in ev.default.items() if d.outcome is nf.Outcome.MAYBE]
            verb = "admits"
            if maybe:
                verb = "may admit"
                what += (f" (maybe: {_decider_text(maybe[0])} cannot be evaluated by this "
                         "scanner)")
            also = f"; also {', '.join(_ports_text(a) for a in extra)}" if extra else ""
            yield Result(Status.FAIL, subject,
                         f"IPv{fam} input {verb} {what} (no provable default deny; "
                         f"{_mech_text(st)}){also}.{rnote}",
                         expected=f"only {want}", actual=what, aspect=aspect,
                         evidence=tuple(evidence),
                         remediation=_remediation(ctx, st, extra))
            continue
        if extra:
            lines = "; ".join(f"{_ports_text(a)} ({a[3].outcome}: {_decider_text(a[3])})"
                              for a in extra)
            yield Result(Status.FAIL, subject,
                         f"IPv{fam} input admits ports beyond {want}: {lines}.{rnote}",
                         expected=f"only {want}",
                         actual=", ".join(_ports_text(a) for a in extra), aspect=aspect,
                         evidence=tuple(evidence),
                         remediation=_remediation(ctx, st, extra),
                         data={"admitted": [_ports_text(a) for a in extra]})
            continue
        yield Result(Status.PASS, subject,
                     f"IPv{fam} input admits only allowed ports ("
                     + (", ".join(_ports_text(a) for a in ev.admitted) or "none")
                     + f"; {_mech_text(st)}).{rnote}", expected=f"only {want}", aspect=aspect,
                     evidence=tuple(evidence))


_DESC = ("Running state (live scan of /): nft -j list ruleset plus iptables-legacy "
         "(iptables -V). Boot: nftables.service's file with includes, ufw (ENABLED=yes and "
         "ufw.service enabled), firewalld (DefaultZone; /etc zones over /usr/lib), "
         "/etc/iptables/rules.v4|v6 with netfilter-persistent (RHEL: /etc/sysconfig/"
         "iptables with iptables.service). Every base chain on the input "
         "hook is evaluated in priority order: accept ends only its chain, drop is final, a "
         "missing policy accepts. Results per address family and state.")


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``firewall.default_deny`` and ``firewall.allowed_ports``."""
    return [
        CheckSpec(id="firewall.default_deny",
                  title="A firewall drops new inbound connections by default",
                  run=run_default_deny, params_schema=DEFAULT_DENY_SCHEMA, description=_DESC),
        CheckSpec(id="firewall.allowed_ports",
                  title="The firewall admits only the allowed ports",
                  run=run_allowed_ports, params_schema=ALLOWED_SCHEMA, description=_DESC),
    ]



