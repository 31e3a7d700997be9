"""The firewall fix never locks a cluster node out: what it admits comes from the
ruleset's ``settings.firewall.allow_inbound`` (Slurm's ports from the scanned slurm.conf),
the README lists exactly that, and the real nft, loading the generated file in a throw-away
network namespace, admits the declared ports and nothing else."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aiaudit.linux.netfilter import inbound, nft
from aiaudit.linux.netfilter import model as nf
from aiaudit.linux.netfilter.evaluate import evaluate
from aiaudit.remediate import bundle as remediate
from tests.netns import netns, run_in
from tests.reporters.scans import scan_root

FW_RULES = ("FW-DEFAULT-DENY-INPUT", "FW-ONLY-ALLOWED-PORTS")
NFT_UNIT = "[Service]\nExecStart=/usr/sbin/nft -f /etc/nftables.conf\n" \
           "[Install]\nWantedBy=sysinit.target\n"
SLURM_CONF = "ClusterName=c\nSlurmctldPort=7001-7002\nSlurmdPort=7000\n" \
             "SrunPortRange=60001-60010\n"
CLUSTER = {"firewall": {"allow_inbound": [
    "ssh", "slurm", {"preset": "exporters", "from": ["10.0.0.0/24", "fd00::/64"]},
    {"preset": "fabric", "iif": ["ib0"]}, {"preset": "fabric", "from": ["10.10.0.0/16"]},
    "5000/udp"]}}
DECLARED_ANY = {("tcp", 22, 22), ("tcp", 7001, 7002), ("tcp", 7000, 7000),
                ("tcp", 60001, 60010), ("udp", 5000, 5000)}


def _expand(ranges) -> set[tuple[str, int]]:
    return {(r[0], port) for r in ranges for port in range(r[1], r[2] + 1)}


def _bundle(make_root, tmp_path: Path, settings, files=None):
    root = make_root({"/usr/lib/systemd/system/nftables.service": NFT_UNIT, **(files or {})})
    run = scan_root(root, only=FW_RULES, settings=settings)
    out = tmp_path / "bundle"
    return remediate.write(run, str(out)), out, run


def test_cluster_settings_shape_the_fix(make_root, tmp_path: Path) -> None:
    b, out, _run = _bundle(make_root, tmp_path, CLUSTER, {"/etc/slurm/slurm.conf": SLURM_CONF})
    conf = b.files[remediate.NFTABLES_CONF]
    assert "tcp dport 22 accept" in conf and conf.endswith("}\n}\n")
    assert "tcp dport { 7001-7002, 7000, 60001-60010 } accept" in conf
    assert "ip saddr 10.0.0.0/24 tcp dport { 9100, 9400 } accept" in conf
    assert "ip6 saddr fd00::/64 tcp dport { 9100, 9400 } accept" in conf
    assert 'iifname "ib0" accept' in conf and "ip saddr 10.10.0.0/16 accept" in conf
    assert "udp dport 5000 accept" in conf
    assert b.enable == ["nftables.service"]
    assert b.apply == ["nftables 22,7001-7002,7000,60001-60010"]
    readme = (out / "README.txt").read_text()
    listed = readme.split("admits new inbound connections only from/to:\n")[1]
    listed = listed.split("\nEverything else is dropped.")[0].splitlines()
    assert listed == [
        "  loopback, established and related connections, ICMP and ICMPv6",
        "  22/tcp from anywhere (ssh)",
        "  7001-7002/tcp, 7000/tcp, 60001-60010/tcp from anywhere (slurm, etc/slurm/slurm.conf)",
        "  9100/tcp, 9400/tcp from 10.0.0.0/24, fd00::/64 (exporters)",
        "  everything on ib0 (fabric)", "  everything from 10.10.0.0/16 (fabric)",
        "  5000/udp from anywhere (allow_inbound)"]
    # nothing is left to do by hand for the firewall (the unit exists, settings say all)
    assert not [f for f in b.needs_hand() if f.rule_id in FW_RULES]


def test_slurm_defaults_and_no_slurm(make_root, tmp_path: Path) -> None:
    # Slurm installed (a unit), no slurm.conf (configless): the default ports
    b, _out, _ = _bundle(make_root, tmp_path, {"firewall": {"allow_inbound": ["ssh", "slurm"]}},
                         {"/usr/lib/systemd/system/slurmd.service": "[Service]\n"})
    assert "tcp dport { 6817, 6818 } accept" in b.files[remediate.NFTABLES_CONF]
    # no Slurm at all: ssh only, and the file says why
    b, _out, _ = _bundle(make_root, tmp_path / "2", {})
    conf = b.files[remediate.NFTABLES_CONF]
    assert "tcp dport 22 accept" in conf and "udp" not in conf.split("policy drop")[1]
    b, _out, _ = _bundle(make_root, tmp_path / "3",
                         {"firewall": {"allow_inbound": ["ssh", "slurm"]}})
    assert "# note: slurm: Slurm is not installed" in b.files[remediate.NFTABLES_CONF]


def test_bad_cidr_is_an_error_not_a_firewall() -> None:
    with pytest.raises(inbound.SettingsError, match=r"300\.1\.1\.1/8"):
        inbound.admits({"firewall": {"allow_inbound": [
            {"preset": "fabric", "from": ["300.1.1.1/8"]}]}}, lambda: (False, None, {}))
    with pytest.raises(inbound.SettingsError, match="needs `from`"):
        inbound.admits({"firewall": {"allow_inbound": [{"preset": "fabric"}]}},
                       lambda: (False, None, {}))


def test_real_nft_admits_the_declared_ports_and_nothing_else(make_root, tmp_path) -> None:
    """``nft -c -f`` accepts the file; loaded in a netns, the running ruleset (``nft -j``)
    evaluated port by port admits from anywhere exactly the declared ports, and the rest
    only from the declared sources and interfaces."""
    _b, out, _ = _bundle(make_root, tmp_path, CLUSTER, {"/etc/slurm/slurm.conf": SLURM_CONF})
    conf = out / "files/etc/nftables.conf"
    with netns("fwbundle") as ns:
        run_in(ns, "nft", "-c", "-f", str(conf))
        run_in(ns, "nft", "-f", str(conf))
        rs = nft.parse_json(run_in(ns, "nft", "-j", "list", "ruleset"))
    for fam in (4, 6):
        ev = evaluate(rs, fam, [])
        assert _expand(ev.admitted) == _expand(DECLARED_ANY), fam
        assert all(d.outcome.value != "accept" for d in ev.default.values())
        # the exporters only from the monitoring network
        assert _expand(ev.restricted) >= {("tcp", 9100), ("tcp", 9400)}
        # the fabric (a source or interface a rule names) reaches any other port, an
        # arbitrary source does not
        for proto, port in (("tcp", 29500), ("udp", 40000)):
            probe = nf.Probe(fam, proto, port)
            assert nf.decide(rs, probe).outcome is nf.Outcome.DROP
            assert nf.decide(rs, nf.Probe(fam, proto, port, restricted=True)).outcome \
                is nf.Outcome.ACCEPT
    # the file as scanned offline: the rules pass with these settings
    root = make_root({"/usr/lib/systemd/system/nftables.service": NFT_UNIT,
                      "/etc/slurm/slurm.conf": SLURM_CONF,
                      "/etc/nftables.conf": conf.read_text()},
                     {"/etc/systemd/system/sysinit.target.wants/nftables.service":
                      "/usr/lib/systemd/system/nftables.service"})
    after = scan_root(root, only=FW_RULES, settings=CLUSTER)
    assert {f.result.subject: f.status.value for f in after.findings} == {
        "ipv4 (boot)": "pass", "ipv6 (boot)": "pass"}, [f.result.message
                                                          for f in after.findings]


def test_nft_check_mode_on_every_fixture_bundle(make_root, tmp_path: Path) -> None:
    """``nft -c -f`` accepts the generated file with the shipped settings."""
    _b, out, _ = _bundle(make_root, tmp_path, {"firewall": {"allow_inbound": ["ssh", "slurm"]}},
                        {"/etc/slurm/slurm.conf": "SlurmdPort=6818\n"})
    with netns("fwcheck") as ns:
        run_in(ns, "nft", "-c", "-f", str(out / "files/etc/nftables.conf"))
    assert subprocess.run(["sh", "-n", str(out / "install.sh")]).returncode == 0


def test_playbook_loads_the_firewall_with_a_rollback(make_root, tmp_path: Path) -> None:
    """The playbook guards a live firewall load as install.sh does: it refuses when the
    port Ansible connects on is not admitted, arms a timed rollback before loading, and
    disarms it only after a new connection got through."""
    import jinja2
    import yaml

    _b, out, _run = _bundle(make_root, tmp_path, CLUSTER, {"/etc/slurm/slurm.conf": SLURM_CONF})
    play = yaml.load((out / "playbook.yml").read_text(), Loader=remediate.playbook_loader())
    tasks = play[0]["tasks"]
    names = [t["name"] for t in tasks]
    order = ["Refuse a firewall that drops this Ansible connection",
             "Keep the running ruleset for the rollback", "Arm the firewall rollback",
             "Load /etc/nftables.conf", "Drop the open connection",
             "Reconnect through the new firewall", "Disarm the firewall rollback"]
    assert [n for n in names if n in order] == order
    guard = tasks[names.index(order[0])]
    ranges = guard["vars"]["aiaudit_tcp_admitted"]
    assert ranges == [[22, 22], [7001, 7002], [7000, 7000], [60001, 60010]]
    expr = jinja2.Environment().compile_expression(guard["ansible.builtin.assert"]["that"][0])
    admitted = {port for port in (22, 2222, 7001, 7002, 7003, 60005)
                if expr(aiaudit_tcp_admitted=ranges, aiaudit_ssh_port=port)}
    assert admitted == {22, 7001, 7002, 60005}
    arm = tasks[names.index(order[2])]["ansible.builtin.command"]["argv"]
    assert arm[:2] == ["systemd-run", f"--unit={remediate.ROLLBACK_UNIT}"]
    assert arm[-3:] == ["/usr/sbin/nft", "-f", remediate.FIREWALL_SAVED]
    assert play[0]["vars"]["aiaudit_firewall_rollback"] == remediate.ROLLBACK_DEFAULT
