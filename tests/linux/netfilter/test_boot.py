"""The boot configuration (aiaudit.linux.netfilter.boot): which mechanisms load, what they
load, and what was looked at for those that load nothing."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.netfilter.boot import load_boot
from tests.helpers import FIXTURES
from tests.linux.netfilter.hosts import NFT_UNIT, SSH_ONLY, enabled, nft_root, ufw_root


def test_one_mechanism(make_root) -> None:
    st = load_boot(Host(str(nft_root(make_root, SSH_ONLY))))
    assert st.active() == ["nftables"] and not st.problems and not st.running
    assert st.ruleset is not None and list(st.ruleset.chains) == [("inet", "filter", "input")]
    # ufw, firewalld and the iptables files are not installed: looked for, not active
    assert {e.source.split(":")[0] for e in st.looked} == {
        "ufw", "firewalld", "iptables-persistent", "iptables-services"}


def test_several_mechanisms_are_noted(make_root) -> None:
    root = ufw_root(make_root)
    (root / "etc/nftables.conf").write_text(SSH_ONLY)
    (root / "usr/lib/systemd/system/nftables.service").write_text(NFT_UNIT)
    link = root / "etc/systemd/system/sysinit.target.wants/nftables.service"
    link.parent.mkdir(parents=True)
    link.symlink_to("/lib/systemd/system/nftables.service")
    st = load_boot(Host(str(root)))
    assert st.active() == ["nftables", "ufw"]
    assert any(n.startswith("several firewall mechanisms load at boot (nftables, ufw)")
               for n in st.notes)
    assert st.ruleset is not None and {c.origin for c in st.ruleset.chains.values()} == {
        "nftables", "ufw"}


def test_enabled_nftables_without_its_file(make_root) -> None:
    root = make_root({"/usr/lib/systemd/system/nftables.service": NFT_UNIT},
                     enabled("nftables.service"))
    (nft,) = [m for m in load_boot(Host(str(root))).mechanisms if m.name == "nftables"]
    assert not nft.active and nft.reason.endswith("/etc/nftables.conf is missing")


def test_ufw_without_default_policy_drops_and_names_no_file(make_root) -> None:
    root = ufw_root(make_root)
    (root / "etc/default/ufw").write_text("IPV6=no\n")
    st = load_boot(Host(str(root)))
    assert st.ruleset is not None
    (chain,) = st.ruleset.chains.values()  # IPv4 only
    assert (chain.policy, chain.source) == ("drop", None)


def test_unreadable_iptables_rules_is_a_problem(make_root) -> None:
    files = {"/etc/iptables/rules.v4": "*filter\n:INPUT DROP\n",
             "/etc/iptables/rules.v6": (FIXTURES / "iptables" / "rules.v6").read_text(),
             "/usr/lib/systemd/system/netfilter-persistent.service": "[Service]\n"}
    st = load_boot(Host(str(make_root(files, enabled("netfilter-persistent.service")))))
    assert st.active() == ["iptables-persistent"]
    assert len(st.problems) == 1 and "rules.v4" in st.problems[0]
