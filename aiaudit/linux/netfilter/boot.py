"""The ruleset the enabled firewall services load at boot (live and offline scans).

- ``nftables.service``: the file of its ``ExecStart=nft -f FILE`` (``/etc/nftables.conf``
  on Debian), with ``include``.
- ufw: ``ENABLED=yes`` in ``/etc/ufw/ufw.conf`` *and* ``ufw.service`` enabled;
  ``DEFAULT_INPUT_POLICY``; ``user.rules``/``user6.rules`` tuples.
- firewalld: ``firewalld.service`` enabled; ``DefaultZone`` from
  ``/etc/firewalld/firewalld.conf``, the zone from ``/etc/firewalld/zones`` over
  ``/usr/lib/firewalld/zones``, services mapped to ports.
- ``/etc/iptables/rules.v4``/``rules.v6`` with ``netfilter-persistent`` enabled, and RHEL's
  ``/etc/sysconfig/iptables``/``ip6tables`` with ``iptables.service``/``ip6tables.service``.

Several mechanisms load into the same kernel: their chains are evaluated together (a drop
in any is final).  A mechanism that loads nothing records what was looked at (the unit
file that is not enabled, or where it was looked for), the evidence of a failing result
when no mechanism is active.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from aiaudit.core.errors import HostError, NotFound, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.netfilter.state import FirewallState, Mechanism
from aiaudit.linux.systemd import units as systemd

if TYPE_CHECKING:
    from aiaudit.linux.netfilter import nft
    from aiaudit.linux.netfilter.firewalld import Service, Zone
    from aiaudit.linux.netfilter.ufw import Setting, Tuple

NFTABLES_CONF = "/etc/nftables.conf"
NFT_INCLUDE_DIR = "/etc"
"""nft's default include directory on Debian builds (``DEFAULT_INCLUDE_PATH``)."""


def boot(host: Host) -> FirewallState:
    """:func:`load_boot`, once per run."""
    return host.memo(("fw-boot",), lambda: load_boot(host))


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


# ------------------------------------------------------------------ what was looked at
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


def _enablement_evidence(en: systemd.Enablement) -> list[Evidence]:
    """The link that enables (or masks) a unit, when there is one."""
    return [Evidence.file(en.evidence, None, en.reason)] if en.evidence else []


# ------------------------------------------------------------------ nftables
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
    """How ``nft -f`` finds an included file on the scanned host."""
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


def _load_nftables(host: Host, st: FirewallState, rs: nf.Ruleset) -> None:
    en = systemd.is_enabled(host, "nftables.service")
    path, exec_ev = _nft_file(host)
    ev = [e for e in (exec_ev,) if e is not None] + _enablement_evidence(en)
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
    from aiaudit.linux.netfilter import nft  # the parser: only where nftables loads a file

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


# ------------------------------------------------------------------ ufw
UFW_CONF = "/etc/ufw/ufw.conf"
UFW_DEFAULTS = "/etc/default/ufw"
UFW_RULES = ((4, "/etc/ufw/user.rules"), (6, "/etc/ufw/user6.rules"))


def _load_ufw(host: Host, st: FirewallState, rs: nf.Ruleset) -> None:
    text = host.try_read_text(UFW_CONF)
    if text is None:
        st.looked.append(_not_installed("ufw", (UFW_CONF,)))
        return
    from aiaudit.linux.netfilter import ufw  # only where ufw is installed

    conf = ufw.parse_conf(text)
    en = systemd.is_enabled(host, "ufw.service")
    enabled = conf.get("ENABLED")
    ev = [Evidence.file(UFW_CONF, enabled.line if enabled else None,
                        f"ENABLED={enabled.value}" if enabled else "ENABLED not set"),
          *_enablement_evidence(en)]
    if enabled is None or enabled.value.lower() != "yes":
        st.mechanisms.append(Mechanism("ufw", False, "ENABLED is not yes in ufw.conf", ev))
        return
    if not en.enabled:
        _unit_looked(host, st, "ufw", "ufw.service", en)
        st.mechanisms.append(Mechanism("ufw", False, "ENABLED=yes but ufw.service is not "
                                       f"enabled ({en.reason}): nothing loads it at boot", ev))
        st.notes.append("ufw: ENABLED=yes but ufw.service is not enabled")
        return
    defaults = ufw.parse_conf(host.try_read_text(UFW_DEFAULTS) or "")
    pol = defaults.get("DEFAULT_INPUT_POLICY")
    got = ufw.to_ruleset(pol.value if pol else "DROP", UFW_DEFAULTS,
                         pol.line if pol else None, _ufw_rules(host, st, defaults))
    if pol is None:
        for ch in got.chains.values():
            ch.source = None
    st.mechanisms.append(Mechanism("ufw", True, f"ENABLED=yes and {en.reason}", ev))
    rs.merge(got)


def _ufw_rules(host: Host, st: FirewallState, defaults: dict[str, Setting]
               ) -> list[tuple[int, str, list[Tuple]]]:
    """The user rules of each family ufw filters (IPv6 only with ``IPV6=yes``)."""
    from aiaudit.linux.netfilter import ufw

    ipv6 = defaults.get("IPV6")
    rules = []
    for fam, path in UFW_RULES:
        if fam == 6 and (ipv6 is None or ipv6.value.lower() != "yes"):
            st.notes.append("ufw: IPV6 is not yes in /etc/default/ufw, IPv6 is not filtered")
            continue
        try:
            rules.append((fam, path, ufw.parse_tuples(host.try_read_text(path) or "", path)))
        except (HostError, ParseError) as exc:
            st.problems.append(str(exc))
    return rules


# ------------------------------------------------------------------ firewalld
FIREWALLD_CONF = "/etc/firewalld/firewalld.conf"
FWD_ZONES = ("/etc/firewalld/zones", "/usr/lib/firewalld/zones")
FWD_SERVICES = ("/etc/firewalld/services", "/usr/lib/firewalld/services")


def _first(host: Host, name: str, dirs: tuple[str, ...]) -> str | None:
    for d in dirs:
        if host.is_file(f"{d}/{name}"):
            return f"{d}/{name}"
    return None


def _load_firewalld(host: Host, st: FirewallState, rs: nf.Ruleset) -> None:
    en = systemd.is_enabled(host, "firewalld.service")
    ev = _enablement_evidence(en)
    if not en.enabled:
        if host.exists(FIREWALLD_CONF):
            st.mechanisms.append(Mechanism("firewalld", False, en.reason, ev))
            _unit_looked(host, st, "firewalld", "firewalld.service", en)
        else:
            _unit_looked(host, st, "firewalld", "firewalld.service", en, (FIREWALLD_CONF,))
        return
    from aiaudit.linux.netfilter import firewalld as fwd  # only where firewalld starts at boot
    from aiaudit.linux.netfilter import ufw  # its KEY=value reader, for firewalld.conf

    dz = ufw.parse_conf(host.try_read_text(FIREWALLD_CONF) or "").get("DefaultZone")
    zone_name = dz.value if dz else "public"
    ev.append(Evidence.file(FIREWALLD_CONF, dz.line, f"DefaultZone={dz.value}") if dz
              else Evidence.default("firewalld DefaultZone", "public"))
    zpath = _first(host, f"{zone_name}.xml", FWD_ZONES)
    if zpath is None:
        st.problems.append(f"firewalld: default zone {zone_name!r} has no definition in "
                           + " or ".join(FWD_ZONES))
        st.mechanisms.append(Mechanism("firewalld", True, en.reason, ev))
        return
    try:
        zone = fwd.parse_zone(host.read_text(zpath), zone_name, zpath)
        services = _firewalld_services(host, zone)
    except (HostError, ParseError) as exc:
        st.problems.append(str(exc))
        st.mechanisms.append(Mechanism("firewalld", True, en.reason, ev))
        return
    ev.append(Evidence.file(zpath, zone.target_line, f'target="{zone.target}"'))
    st.mechanisms.append(Mechanism("firewalld", True, f"{en.reason}; default zone "
                                   f"{zone_name} ({zpath})", ev))
    if zpath.startswith("/etc/"):
        st.notes.append(f"firewalld: {zpath} overrides the vendor zone")
    _note_bound_zones(host, st, zone_name)
    rs.merge(fwd.to_ruleset(zone, services))


def _firewalld_services(host: Host, zone: Zone) -> dict[str, tuple[str, Service] | None]:
    """The definitions (file, ports) of the zone's services; ``None`` where none is found."""
    from aiaudit.linux.netfilter import firewalld as fwd

    services: dict[str, tuple[str, fwd.Service] | None] = {}
    for e in zone.services:
        sname = e.attrs["name"]
        spath = _first(host, f"{sname}.xml", FWD_SERVICES)
        services[sname] = None if spath is None else \
            (spath, fwd.parse_service(host.read_text(spath), spath))
    return services


def _note_bound_zones(host: Host, st: FirewallState, default_zone: str) -> None:
    """Note the other zones bound to interfaces or sources: not evaluated."""
    from aiaudit.linux.netfilter import firewalld as fwd

    for other in host.glob("/etc/firewalld/zones/*.xml"):
        oname = other.rsplit("/", 1)[1][:-4]
        if oname == default_zone:
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


# ------------------------------------------------------------------ iptables-restore files
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
        ev = _enablement_evidence(en)
        if not en.enabled:
            st.mechanisms.append(Mechanism(mech, False, en.reason, ev))
            _unit_looked(host, st, mech, unit, en)
            continue
        from aiaudit.linux.netfilter import iptables as ipt  # only where a rules file loads

        for fam, path in present:
            try:
                rs.merge(ipt.parse(host.read_text(path), fam, path))
                ev.append(Evidence.file(path))
            except (HostError, ParseError) as exc:
                st.problems.append(str(exc))
        st.mechanisms.append(Mechanism(mech, True, en.reason, ev))
    st.looked += [_not_installed(mech, tuple(paths)) for mech, paths in absent.items()]
