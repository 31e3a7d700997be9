"""The fix the firewall checks propose (aiaudit.linux.netfilter.fix) for each mechanism,
admitting the declared inbound set."""

from __future__ import annotations

from aiaudit.core.host import Host
from aiaudit.linux.netfilter import fix
from aiaudit.linux.netfilter.state import FirewallState, Mechanism

CLUSTER = {"firewall": {"allow_inbound": [
    "ssh", {"preset": "exporters", "from": ["10.0.0.0/24", "fd00::/64"]},
    {"preset": "fabric", "iif": ["ib0"]}, "5000-5001/udp"]}}


def state(*active: str) -> FirewallState:
    return FirewallState(None, [Mechanism(name, True, "enabled") for name in active])


def test_ufw_commands(make_root) -> None:
    host = Host(str(make_root({})))
    rem = fix.remediation(host, CLUSTER, state("ufw"), [("tcp", 8888, 8889, None)])
    (snippet,) = rem.snippets
    assert snippet.content.split(" && ") == [
        "ufw default deny incoming", "ufw allow from any to any port 22 proto tcp",
        "ufw allow from 10.0.0.0/24 to any port 9100 proto tcp",
        "ufw allow from 10.0.0.0/24 to any port 9400 proto tcp",
        "ufw allow from fd00::/64 to any port 9100 proto tcp",
        "ufw allow from fd00::/64 to any port 9400 proto tcp",
        "ufw allow in on ib0 from any", "ufw allow from any to any port 5000:5001 proto udp",
        "ufw delete allow 8888:8889/tcp", "ufw enable", "systemctl enable --now ufw"]


def test_firewalld_commands(make_root) -> None:
    host = Host(str(make_root({})))
    (snippet,) = fix.remediation(host, CLUSTER, state("firewalld"),
                                 [("tcp", 8888, 8888, None)]).snippets
    cmds = snippet.content.split(" && ")
    assert cmds[:3] == ["firewall-cmd --permanent --remove-port=8888/tcp",
                        "firewall-cmd --permanent --set-target=default",
                        "firewall-cmd --permanent --add-port=22/tcp"]
    assert "'rule family=ipv6 source address=fd00::/64 port port=9400 protocol=tcp " \
           "accept'" in snippet.content
    assert "firewall-cmd --permanent --zone=trusted --add-interface=ib0" in cmds
    assert cmds[-2:] == ["firewall-cmd --permanent --add-port=5000-5001/udp",
                         "firewall-cmd --reload"]


def test_nftables_file_unit_and_load(make_root) -> None:
    host = Host(str(make_root({"/usr/lib/systemd/system/nftables.service": "[Service]\n"})))
    rem = fix.remediation(host, CLUSTER, state())
    assert rem.summary.startswith("No firewall loads at boot: write /etc/nftables.conf")
    kinds = [(s.kind, s.path or s.content) for s in rem.snippets]
    assert kinds[1:] == [("enable", "nftables.service"), ("apply", "nftables 22")]
    assert 'iifname "ib0" accept' in rem.snippets[0].content and not rem.manual
    # no unit on an image: installing the package is left to where the image is built
    rem = fix.remediation(Host(str(make_root({}))), CLUSTER, state("nftables"))
    assert rem.manual == ("In the image's build, not on this machine: `apt-get install -y -o "
                          "Dpkg::Options::=--force-confold nftables && systemctl enable "
                          "nftables.service`.")
    # no unit on a running host: the package is installed (as its distribution does, no
    # prompt, the file written first kept) and its unit enabled by the same commands
    rem = fix.remediation(Host(str(make_root({
        "/etc/os-release": "ID=debian\n"})), live=True), CLUSTER, state("nftables"))
    assert rem.summary.startswith("Replace /etc/nftables.conf")
    assert not rem.manual and not any(s.kind == "enable" for s in rem.snippets)
    [cmd] = [s.content for s in rem.snippets if s.kind == "command"]
    assert cmd == ("apt-get install -y -o Dpkg::Options::=--force-confold nftables && "
                   "systemctl enable nftables.service")
    assert [s.kind for s in rem.snippets] == ["file", "command", "apply"]


def test_bad_settings_propose_nothing(make_root) -> None:
    bad = {"firewall": {"allow_inbound": [{"preset": "fabric"}]}}
    rem = fix.remediation(Host(str(make_root({}))), bad, state())
    assert rem.summary.startswith("No fix proposed: settings.firewall: preset fabric needs")
    assert rem.snippets == ()
