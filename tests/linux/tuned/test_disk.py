"""aiaudit.linux.tuned.disk: tuned's [disk] plugin (devices=, readahead=)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.host import Host
from aiaudit.linux.tuned import disk
from tests.checks.tuning_trees import TUNED_ENABLED, TUNED_LINK


@pytest.mark.parametrize(("spec", "name", "hit"), [
    ("sd*", "sda", True), ("sd*", "nvme0n1", False),
    ("sd*, nvme*", "nvme0n1", True),
    ("!sda", "sdb", True), ("!sda", "sda", False),        # only negations: all but those
    ("sd*,!sdb", "sdb", False), (" , ", "sda", True),
])
def test_devices_match(spec: str, name: str, hit: bool) -> None:
    assert disk.devices_match(spec, name) is hit


@pytest.mark.parametrize(("value", "kb"), [
    ("4096", "4096"), ("8192 s", "4096"), (">8192 s", "4096"), (" > 256", "256"),
    ("x", None), ("", None), ("1" * 5000, None),
])
def test_parse_readahead(value: str, kb: str | None) -> None:
    assert disk.parse_readahead(value) == kb


@given(st.text(max_size=40))
def test_parse_readahead_never_raises(value: str) -> None:
    out = disk.parse_readahead(value)
    assert out is None or out.isdigit()


def test_disk_option_of_the_last_matching_unit(make_root) -> None:
    files = {**TUNED_ENABLED, "/etc/tuned/active_profile": "t\n",
             "/etc/tuned/t/tuned.conf": "[disk]\nelevator=bfq\n"
                                        "[disk_nvme]\ntype=disk\ndevices=nvme*\nelevator=kyber\n"
                                        "[off]\ntype=disk\nenabled=false\nelevator=none\n"}
    host = Host(str(make_root(files, TUNED_LINK)))
    nvme = disk.disk_option(host, "nvme0n1", "elevator")
    assert nvme is not None and (nvme.value, nvme.line) == ("kyber", 6)
    sda = disk.disk_option(host, "sda", "elevator")
    assert sda is not None and sda.value == "bfq"
    assert disk.disk_option(host, "sda", "readahead") is None
    # tuned not enabled: nothing applies
    assert disk.disk_option(Host(str(make_root(files))), "sda", "elevator") is None
