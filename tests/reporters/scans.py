"""Real scans for reporter tests: the shipped ruleset against fixture roots."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from aiaudit.core import plugins, ruleset
from aiaudit.core.host import Host
from aiaudit.core.model import RunResult
from aiaudit.core.scan import ScanOptions, scan
from tests.helpers import ROOTS

FIXTURE_ROOT = ROOTS / "sysctl-etc-overrides-vendor" / "root"


def scan_root(root: Path | str, *, live: bool = False, ruleset_ref: str = "dl-training",
              **options: object) -> RunResult:
    """Scan ``root`` with a shipped ruleset; check exceptions propagate."""
    rs = ruleset.load(ruleset_ref, plugins.registry())
    options.setdefault("reraise", True)
    options.setdefault("settings", dict(rs.settings))  # as the CLI passes them
    return scan(rs, Host(str(root), live=live), ScanOptions(**options))  # type: ignore[arg-type]


def as_image(run: RunResult, image_id: str) -> RunResult:
    """The same run, as an offline scan of an image with ``image_id`` (``name:version``),
    which has no machine id of its own."""
    name, _, version = image_id.partition(":")
    return replace(run, host=replace(run.host, mode="offline", image_id=image_id,
                                     image_name=name, image_version=version or None,
                                     machine_id=None))
