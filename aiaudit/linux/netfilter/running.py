"""The ruleset the kernel enforces now, read with commands (a live scan of ``/`` only).

``nft -j list ruleset`` shows every nf_tables table, iptables-nft's included; for those,
``iptables-save`` is parsed instead when nft shows untranslated ``xt`` matches.
iptables-legacy rules are invisible to nft but enforced by the kernel: ``iptables -V``
says which backend ``iptables`` is, and ``iptables-legacy-save`` (or ``iptables-save`` on a
legacy build) lists them, run only where ``/proc/net/ip{,6}_tables_names`` shows a legacy
table (running it would otherwise autoload ``ip_tables``, a side effect an audit must not
have).
"""

from __future__ import annotations

from aiaudit.core.errors import CommandError, HostError, ParseError
from aiaudit.core.host import Host
from aiaudit.core.model import Evidence
from aiaudit.linux.netfilter import iptables as ipt
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.netfilter.state import NFT_TIMEOUT, FirewallState, Mechanism

NFT_LIST = "nft -j list ruleset"


def running(host: Host) -> FirewallState:
    """:func:`load_running`, once per run."""
    return host.memo(("fw-running",), lambda: load_running(host))


def load_running(host: Host) -> FirewallState:
    """The ruleset the kernel enforces now (commands; live scan of / only)."""
    st = FirewallState(nf.Ruleset(), running=True)
    st.ruleset = _nft_ruleset(host, st)
    rs = st.ruleset
    if rs is None:
        return st
    if not rs.xt_tables and not any(_legacy_tables(host, fam) for fam in (4, 6)):
        # whatever backend `iptables` has, nothing below would run: skip `iptables -V`
        return st
    try:
        ver = host.run(["iptables", "-V"], timeout=NFT_TIMEOUT).stdout.strip()
    except CommandError:
        ver = ""
    kind = ipt.variant(ver)
    if kind == "legacy":
        _merge_legacy(host, st, rs, (("iptables-save", 4), ("ip6tables-save", 6)))
    elif kind == "nf_tables":
        _replace_xt_tables(host, st, rs)
        _merge_legacy(host, st, rs, (("iptables-legacy-save", 4),
                                     ("ip6tables-legacy-save", 6)))
    return st


def _nft_ruleset(host: Host, st: FirewallState) -> nf.Ruleset | None:
    """``nft -j list ruleset``: the nf_tables ruleset (empty when nft is not installed),
    ``None`` with a problem recorded when it cannot be read."""
    try:
        res = host.run(NFT_LIST.split(), timeout=NFT_TIMEOUT)
    except CommandError as exc:
        if "not installed" not in str(exc):
            st.problems.append(str(exc))
        else:
            st.looked.append(Evidence.default(NFT_LIST, "nft is not installed"))
        return st.ruleset
    if res.returncode != 0:
        err = res.stderr.strip() or f"exit status {res.returncode}"
        hint = " (needs root / CAP_NET_ADMIN)" if "ermission" in err or \
            "not permitted" in err else ""
        st.problems.append(f"{NFT_LIST}: {err}{hint}")
        return st.ruleset
    from aiaudit.linux.netfilter import nft  # the parser: only when nft listed a ruleset

    try:
        rs = nft.parse_json(res.stdout)
    except ParseError as exc:
        st.problems.append(str(exc))
        return st.ruleset
    st.mechanisms.append(Mechanism("nftables", True, NFT_LIST, [Evidence.command(NFT_LIST)]))
    return rs


def _replace_xt_tables(host: Host, st: FirewallState, rs: nf.Ruleset) -> None:
    """iptables-nft rules with extensions nft cannot translate show as ``xt``: parse
    ``iptables-save`` (nft backend) for those tables instead."""
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


def _merge_legacy(host: Host, st: FirewallState, rs: nf.Ruleset,
                  cmds: tuple[tuple[str, int], ...]) -> None:
    """Add the iptables-legacy rules ``cmds`` list (per family) to ``rs``."""
    for cmd, fam in cmds:
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


def _legacy_tables(host: Host, fam: int) -> list[str]:
    """Legacy (x_tables) tables registered in this netns: ``/proc/net/ip{,6}_tables_names``."""
    try:
        return host.read_text(f"/proc/net/ip{'6' if fam == 6 else ''}_tables_names").split()
    except HostError:
        return []


def _run_save(host: Host, cmd: str, fam: int, st: FirewallState) -> nf.Ruleset | None:
    """The ruleset ``cmd`` (an ``iptables-save``) prints; ``None`` (with a problem unless
    it is not installed) when it cannot."""
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
