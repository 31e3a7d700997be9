"""Where a scan has no kernel log, its rules skip before the reader and the Xid catalogue
are imported or parsed (the prolog's instruction budget, issue 28)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aiaudit.core.host import Host
from aiaudit.linux.kmsg.source import absent

PROBE = """
import sys
from aiaudit.api import CheckContext
from aiaudit.core.host import Host
from aiaudit.linux.kmsg import judge
host = Host(sys.argv[1], live=sys.argv[2] == "live")
got = judge.gate(CheckContext(host=host, params={}, rule_id="T", user=None, settings={}))
print(got.status.value, "|", got.message)
print(sorted(m for m in sys.modules if m.startswith("aiaudit.linux.kmsg.")))
"""


@pytest.mark.parametrize("live", [False, True])
def test_no_log_skips_without_loading_the_reader(tmp_path: Path, live: bool) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path),
                          "live" if live else "offline"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("skip | ")
    assert ("dev/kmsg" in out[0]) if live else ("offline" in out[0])
    assert out[1] == "['aiaudit.linux.kmsg.judge', 'aiaudit.linux.kmsg.source']"


def test_a_snapshot_with_its_log_is_not_absent(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "kmsg").write_text("6,1,100,-;hello\n")
    assert absent(Host(str(tmp_path), live=True)) is None
    assert absent(Host(str(tmp_path), live=False)) is not None
