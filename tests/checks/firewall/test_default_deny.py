"""firewall.default_deny: offline boot configuration of every mechanism (SEMANTICS §6.6 edge
cases), the running state with canned command output, and inside a network namespace
loaded with real nft / iptables-legacy rules."""

from __future__ import annotations

import json
import subprocess

import pytest

from aiaudit.core.model import Status
from tests.helpers import FIXTURES
from tests.linux.netfilter.hosts import (
    NFT,
    NFT_UNIT,
    SSH_ONLY,
    FakeCommands,
    enabled,
    firewalld_root,
    live_results,
    nft_root,
    results,
    run_fake,
    ufw_root,
)
from tests.netns import netns, require, run_in


# ------------------------------------------------------------------ nftables
def test_nftables_default_deny_pass(make_root) -> None:
    root = nft_root(make_root, SSH_ONLY)
    dd = results("firewall.default_deny", root)
    assert set(dd) == {"ipv4 (boot)", "ipv6 (boot)"}
    for r in dd.values():
        assert r.status is Status.PASS, r.message
        assert "decided by nftables" in r.message
        assert any(e.source == "etc/nftables.conf:5" for e in r.evidence)
    ap = results("firewall.allowed_ports", root)
    assert all(r.status is Status.PASS for r in ap.values())


def test_nftables_conf_but_service_disabled(make_root) -> None:
    dd = results("firewall.default_deny", nft_root(make_root, SSH_ONLY, enable=False))
    r = dd["ipv4 (boot)"]
    assert r.status is Status.FAIL and "no firewall mechanism is active" in r.message
    assert "nftables.service is not enabled" in r.message
    # the file alone would not load at boot: the fix is the file, the unit enabled (both
    # work offline) and a guarded live load
    conf, enable, load = r.remediation.snippets
    assert (conf.kind, conf.path) == ("file", "/etc/nftables.conf")
    assert "policy drop" in conf.content and "tcp dport 22 accept" in conf.content
    assert (enable.kind, enable.content) == ("enable", "nftables.service")
    assert (load.kind, load.content) == ("apply", "nftables 22")
    # with the service enabled, replacing the file is the fix
    conf = SSH_ONLY.replace("policy drop", "policy accept")
    r2 = results("firewall.default_deny", nft_root(make_root, conf))["ipv4 (boot)"]
    snippets = {s.kind: s for s in r2.remediation.snippets}
    assert snippets["file"].path == "/etc/nftables.conf"
    assert "policy drop" in snippets["file"].content


def test_two_base_chains_inet_accept_ip_drop(make_root) -> None:
    root = nft_root(make_root, (NFT / "two_chains.nft").read_text())
    dd = results("firewall.default_deny", root)
    assert dd["ipv4 (boot)"].status is Status.PASS
    assert dd["ipv6 (boot)"].status is Status.FAIL
    assert "inet allowall input" in dd["ipv6 (boot)"].message


def test_missing_policy_accepts(make_root) -> None:
    dd = results("firewall.default_deny",
                 nft_root(make_root, (NFT / "missing_policy.nft").read_text()))
    r = dd["ipv4 (boot)"]
    assert r.status is Status.FAIL and "policy accept" in r.message


def test_broken_nftables_conf_is_error(make_root) -> None:
    root = nft_root(make_root, "table inet filter {\n chain input {\n type filter hook\n")
    dd = results("firewall.default_deny", root)
    assert {r.status for r in dd.values()} == {Status.ERROR}
    assert "nft -f would refuse" in dd["ipv4 (boot)"].message


def test_execstart_file_is_followed(make_root) -> None:
    root = make_root({"/etc/sysconfig/nftables.conf": SSH_ONLY,
                      "/usr/lib/systemd/system/nftables.service":
                          NFT_UNIT.replace("/etc/nftables.conf", "/etc/sysconfig/nftables.conf")},
                     enabled("nftables.service"))
    dd = results("firewall.default_deny", root)
    assert dd["ipv4 (boot)"].status is Status.PASS
    assert any(e.source.startswith("etc/sysconfig/nftables.conf") for e in
               dd["ipv4 (boot)"].evidence)


def test_relative_include_searches_etc_only(make_root) -> None:
    """Real nft (1.0.6): `include "sub.nft"` in /etc/sysconfig/nftables.conf looks for
    /etc/sub.nft, not /etc/sysconfig/sub.nft: the file fails to load; a glob that matches
    nothing is fine."""
    unit = NFT_UNIT.replace("/etc/nftables.conf", "/etc/sysconfig/nftables.conf")
    files = {"/etc/sysconfig/nftables.conf": 'include "sub.nft"\n',
             "/etc/sysconfig/sub.nft": SSH_ONLY,
             "/usr/lib/systemd/system/nftables.service": unit}
    bad = results("firewall.default_deny", make_root(files, enabled("nftables.service")))
    assert bad["ipv4 (boot)"].status is Status.ERROR and "sub.nft" in bad["ipv4 (boot)"].message
    files["/etc/sub.nft"] = SSH_ONLY
    files["/etc/sysconfig/nftables.conf"] = 'include "sub.nft"\ninclude "none.d/*.nft"\n'
    ok = results("firewall.default_deny", make_root(files, enabled("nftables.service")))
    assert ok["ipv4 (boot)"].status is Status.PASS
    assert any(e.source.startswith("etc/sub.nft:") for e in ok["ipv4 (boot)"].evidence)


# ------------------------------------------------------------------ ufw
def test_ufw_enabled_but_unit_disabled(make_root) -> None:
    dd = results("firewall.default_deny", ufw_root(make_root, unit=False))
    r = dd["ipv4 (boot)"]
    assert r.status is Status.FAIL
    assert "ENABLED=yes but ufw.service is not enabled" in r.message
    assert "systemctl enable --now ufw" in r.remediation.snippets[0].content


def test_ufw_conf_disabled(make_root) -> None:
    dd = results("firewall.default_deny", ufw_root(make_root, enabled_conf="no"))
    assert dd["ipv4 (boot)"].status is Status.FAIL


def test_ufw_without_ipv6(make_root) -> None:
    dd = results("firewall.default_deny", ufw_root(make_root, ipv6="no"))
    assert dd["ipv4 (boot)"].status is Status.PASS
    assert dd["ipv6 (boot)"].status is Status.FAIL
    assert "IPV6 is not yes" in dd["ipv6 (boot)"].message


# ------------------------------------------------------------------ firewalld
def test_firewalld_trusted_default_zone(make_root) -> None:
    root = firewalld_root(make_root, conf="DefaultZone=trusted\n")
    r = results("firewall.default_deny", root)["ipv4 (boot)"]
    assert r.status is Status.FAIL and 'zone target "ACCEPT"' in r.message
    assert any(e.source == "etc/firewalld/firewalld.conf:1" for e in r.evidence)


def test_firewalld_other_bound_zone_is_noted(make_root) -> None:
    root = firewalld_root(make_root)
    (root / "etc/firewalld/zones").mkdir(parents=True, exist_ok=True)
    (root / "etc/firewalld/zones/trusted.xml").write_text(
        '<?xml version="1.0"?>\n<zone target="ACCEPT">\n<interface name="eth1"/>\n</zone>\n')
    r = results("firewall.default_deny", root)["ipv4 (boot)"]
    assert r.status is Status.PASS
    assert "zone trusted" in r.message and "eth1" in r.message


# ------------------------------------------------------------------ iptables-restore files
def test_iptables_persistent(make_root) -> None:
    files = {"/etc/iptables/rules.v4": (FIXTURES / "iptables" / "rules.v4").read_text(),
             "/etc/iptables/rules.v6": (FIXTURES / "iptables" / "rules.v6").read_text(),
             "/usr/lib/systemd/system/netfilter-persistent.service": "[Service]\n"}
    root = make_root(files, enabled("netfilter-persistent.service"))
    dd = results("firewall.default_deny", root)
    assert dd["ipv4 (boot)"].status is Status.PASS
    assert dd["ipv6 (boot)"].status is Status.FAIL
    assert any(e.source == "etc/iptables/rules.v6:2" for e in dd["ipv6 (boot)"].evidence)
    off = make_root(files)
    assert results("firewall.default_deny", off)["ipv4 (boot)"].status is Status.FAIL


def test_rhel_iptables_services(make_root) -> None:
    files = {"/etc/sysconfig/iptables": (FIXTURES / "iptables" / "rules.v4").read_text(),
             "/usr/lib/systemd/system/iptables.service": "[Service]\n"}
    dd = results("firewall.default_deny", make_root(files, enabled("iptables.service")))
    assert dd["ipv4 (boot)"].status is Status.PASS
    assert "iptables-services" in dd["ipv4 (boot)"].message
    assert dd["ipv6 (boot)"].status is Status.FAIL


def test_ipv6_param_off(make_root) -> None:
    dd = results("firewall.default_deny", nft_root(make_root, SSH_ONLY), {"ipv6": False})
    assert dd["ipv6 (boot)"].status is Status.SKIP


# ------------------------------------------------------------------ live, in a netns
@pytest.mark.oracle
def test_live_nft_ruleset_in_netns() -> None:
    with netns("fwlive") as ns:
        allowed = {"allowed": ["22/tcp", "80/tcp", "443/tcp", "8000-8010/tcp",
                               "60000-61000/udp"]}
        before = live_results(ns, ("firewall.default_deny", {}))
        run_in(ns, "nft", "-f", str(NFT / "server.nft"))
        after = live_results(ns, ("firewall.default_deny", {}),
                             ("firewall.allowed_ports", allowed),
                             ("firewall.allowed_ports", {}))
    assert before["firewall.default_deny{}"]["ipv4 (running)"][0] == "fail"
    dd = after["firewall.default_deny{}"]
    assert dd["ipv4 (running)"][0] == "pass" and dd["ipv6 (running)"][0] == "pass"
    assert after["firewall.allowed_ports" + json.dumps(allowed)]["ipv4 (running)"][0] == "pass"
    r = after["firewall.allowed_ports{}"]["ipv4 (running)"]
    assert r[0] == "fail" and "443/tcp" in r[1]


@pytest.mark.oracle
def test_live_iptables_legacy_invisible_to_nft() -> None:
    require("iptables-legacy-restore")
    rules = "*filter\n:INPUT DROP [0:0]\n-A INPUT -p tcp --dport 22 -j ACCEPT\nCOMMIT\n"
    with netns("fwlegacy") as ns:
        probe = subprocess.run(["nsenter", f"--net={ns}", "iptables-legacy-restore"],
                               input=rules, text=True, capture_output=True)
        if probe.returncode != 0:
            pytest.skip(f"iptables-legacy unusable here: {probe.stderr.strip()}")
        assert '"rule"' not in run_in(ns, "nft", "-j", "list", "ruleset")
        got = live_results(ns, ("firewall.default_deny", {}))["firewall.default_deny{}"]
    assert got["ipv4 (running)"][0] == "pass", got
    assert "iptables-legacy" in got["ipv4 (running)"][1]
    assert got["ipv6 (running)"][0] == "fail"


# ------------------------------------------------------------------ running state, faked
def test_running_not_permitted_is_error_boot_still_judged(make_root) -> None:
    root = nft_root(make_root, SSH_ONLY, extra={"/proc/net/if_inet6": ""})
    host = FakeCommands(root, {"nft -j list ruleset": (
        1, "", "netlink: Error: cache initialization failed: Operation not permitted")})
    got = run_fake(host, "firewall.default_deny")
    assert got["ipv4 (running)"].status is Status.ERROR
    assert "needs root" in got["ipv4 (running)"].message
    assert got["ipv4 (boot)"].status is Status.PASS


def test_iptables_legacy_backend_from_version(make_root) -> None:
    root = make_root({"/proc/net/if_inet6": "", "/proc/net/ip_tables_names": "filter\nnat\n",
                      "/proc/net/ip6_tables_names": ""})
    host = FakeCommands(root, {
        "nft -j list ruleset": (0, '{"nftables": [{"metainfo": {}}]}', ""),
        "iptables -V": (0, "iptables v1.8.9 (legacy)\n", ""),
        "iptables-save": (0, (FIXTURES / "iptables" / "rules.v4").read_text(), ""),
        "ip6tables-save": (0, "", ""),
    })
    got = run_fake(host, "firewall.default_deny")
    assert got["ipv4 (running)"].status is Status.PASS
    assert "iptables-legacy" in got["ipv4 (running)"].message
    assert got["ipv6 (running)"].status is Status.FAIL
    assert "ip6tables-save" not in host.calls  # ip6_tables_names empty: not run


def test_iptables_version_not_asked_when_nothing_depends_on_it(make_root) -> None:
    # no xt tables in the nft output and no legacy table registered: whatever the
    # iptables backend, no *-save would run, so `iptables -V` is not run either
    outputs = {"nft -j list ruleset": (0, '{"nftables": [{"metainfo": {}}]}', ""),
               "iptables -V": (0, "iptables v1.8.9 (legacy)\n", ""),
               "iptables-save": (0, (FIXTURES / "iptables" / "rules.v4").read_text(), "")}
    host = FakeCommands(make_root({"/proc/net/if_inet6": "", "/proc/net/ip_tables_names": "",
                                   "/proc/net/ip6_tables_names": ""}), outputs)
    got = run_fake(host, "firewall.default_deny")
    assert host.calls == ["nft -j list ruleset"]
    assert got["ipv4 (running)"].status is Status.FAIL
    host = FakeCommands(make_root({"/proc/net/if_inet6": "",
                                   "/proc/net/ip_tables_names": "filter\n"}), outputs)
    assert run_fake(host, "firewall.default_deny")["ipv4 (running)"].status is Status.PASS
    assert host.calls[:3] == ["nft -j list ruleset", "iptables -V", "iptables-save"]


def test_running_without_nft_says_so(make_root) -> None:
    root = make_root({"/proc/net/if_inet6": ""})
    got = run_fake(FakeCommands(root, {}), "firewall.default_deny")
    r = got["ipv4 (running)"]
    assert r.status is Status.FAIL
    assert [(e.kind, e.source, e.value) for e in r.evidence] == [
        ("default", "nft -j list ruleset", "nft is not installed")]


# ------------------------------------------------------------------ evidence when nothing loads
def test_nothing_installed_says_where_each_mechanism_was_looked_for(make_root) -> None:
    from aiaudit.linux.systemd.units import UNIT_DIRS

    root = make_root({"/etc/os-release": "ID=debian\n"})
    for check in ("firewall.default_deny", "firewall.allowed_ports"):
        for r in results(check, root).values():
            assert r.status is Status.FAIL
            assert r.evidence and all(e.kind == "default" for e in r.evidence)
            by_what = {e.source.split(":", 1)[0]: e for e in r.evidence}
            assert set(by_what) == {"nftables", "ufw", "firewalld", "iptables-persistent",
                                    "iptables-services"}
            assert all(e.value == "not installed" for e in r.evidence)
            nft_src = by_what["nftables"].source
            assert "etc/nftables.conf" in nft_src and "unit nftables.service in" in nft_src
            assert all(d.lstrip("/") in nft_src for d in UNIT_DIRS)
            assert "etc/ufw/ufw.conf" in by_what["ufw"].source
            assert "etc/iptables/rules.v4, etc/iptables/rules.v6" in \
                by_what["iptables-persistent"].source
            assert "etc/sysconfig/ip6tables" in by_what["iptables-services"].source


def test_unit_installed_not_enabled_is_file_evidence(make_root) -> None:
    r = results("firewall.default_deny",
                nft_root(make_root, SSH_ONLY, enable=False))["ipv4 (boot)"]
    assert r.status is Status.FAIL
    files = {e.path: e.value for e in r.evidence if e.kind == "file"}
    assert files == {"/etc/nftables.conf": "nothing loads it at boot",
                     "/usr/lib/systemd/system/nftables.service":
                         "no target wants nftables.service (not enabled)"}
    # a file that is not there is never file evidence (SARIF would link to it)
    assert not any(e.kind == "file" and "ufw" in e.source for e in r.evidence)


def test_firewalld_unit_without_config_and_iptables_rules_unit_off(make_root) -> None:
    files = {"/usr/lib/systemd/system/firewalld.service": "[Service]\n",
             "/etc/iptables/rules.v4": (FIXTURES / "iptables" / "rules.v4").read_text(),
             "/usr/lib/systemd/system/netfilter-persistent.service": "[Service]\n"}
    r = results("firewall.default_deny", make_root(files))["ipv4 (boot)"]
    assert r.status is Status.FAIL
    got = {(e.kind, e.source): e.value for e in r.evidence}
    assert got[("file", "usr/lib/systemd/system/firewalld.service")] == \
        "no target wants firewalld.service (not enabled)"
    assert got[("default", "firewalld: etc/firewalld/firewalld.conf")] == "not installed"
    assert got[("file", "usr/lib/systemd/system/netfilter-persistent.service")] == \
        "no target wants netfilter-persistent.service (not enabled)"
    assert not any(s.startswith("iptables-persistent:") for _, s in got)


def test_active_mechanism_pass_carries_no_not_installed_noise(make_root) -> None:
    r = results("firewall.default_deny", nft_root(make_root, SSH_ONLY))["ipv4 (boot)"]
    assert r.status is Status.PASS
    assert not any(e.kind == "default" for e in r.evidence)
