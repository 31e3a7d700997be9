"""``settings.firewall`` (aiaudit.linux.netfilter.inbound): the ruleset schema carries the
module's schema,
a ruleset with a bad entry is refused with its place, and the presets decide as documented."""

from __future__ import annotations

import json
from pathlib import Path

from aiaudit.core.resources import read_text
from aiaudit.linux.netfilter import inbound
from tests.helpers import cli

NO_SLURM = lambda: (False, None, {})  # noqa: E731


def test_ruleset_schema_carries_the_settings_schema() -> None:
    doc = json.loads(read_text("schemas", "ruleset.schema.json"))
    assert doc["properties"]["settings"]["properties"]["firewall"] == inbound.SCHEMA


def test_bad_settings_are_refused_with_their_place(tmp_path: Path) -> None:
    for bad in ('["ssh", "telnet"]', '[{"preset": "fabric", "from": ["10.0.0.0/8; drop"]}]',
                '[{"preset": "fabric", "iif": ["eth0\\" accept"]}]', '["22/tcp; flush"]'):
        rs = tmp_path / "rs.yaml"
        rs.write_text(f"ruleset: x\nversion: '1'\nextends: dl-training\nsettings:\n"
                      f"  firewall:\n    allow_inbound: {bad}\n")
        r = cli("validate", str(rs))
        assert r.code == 2 and "rs.yaml:6" in r.err, (bad, r.err)


def test_presets() -> None:
    adm, notes = inbound.admits({}, NO_SLURM)
    assert [a.text() for a in adm] == ["22/tcp from anywhere (ssh)"] and notes == []
    adm, notes = inbound.admits({"firewall": {"allow_inbound": ["slurm"]}}, NO_SLURM)
    assert adm == [] and "not installed" in notes[0]
    adm, notes = inbound.admits({"firewall": {"allow_inbound": ["slurm"]}},
                                lambda: (True, "/etc/slurm/slurm.conf", {
                                    "slurmctldport": "junk", "srunportrange": "60001-63000"}))
    assert [a.text() for a in adm] == [
        "6817/tcp, 6818/tcp, 60001-63000/tcp from anywhere (slurm, etc/slurm/slurm.conf)"]
    assert inbound.any_source_ports(adm) == [("tcp", 6817, 6817), ("tcp", 6818, 6818),
                                             ("tcp", 60001, 63000)]
    adm, _ = inbound.admits({"firewall": {"allow_inbound": [
        {"preset": "exporters", "from": ["10.0.0.7/24"], "name": "prometheus"}]}}, NO_SLURM)
    assert adm[0].sources == ("10.0.0.0/24",) and adm[0].restricted
    assert inbound.any_source_ports(adm) == []
