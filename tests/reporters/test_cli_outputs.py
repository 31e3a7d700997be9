"""Several outputs from one scan, and ``aiaudit render`` of a saved JSON report."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from aiaudit.core import plugins
from tests.helpers import cli
from tests.reporters.scans import FIXTURE_ROOT

FORMATS = sorted(plugins.registry().reporters)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"")
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """One scan written in every format; returns (out dir, {format: file})."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root, symlinks=True)
    before = tree(root)
    out = tmp_path / "out"
    out.mkdir()
    ext = {n: r.extension for n, r in plugins.registry().reporters.items()}
    files = {fmt: out / f"scan.{ext[fmt]}" for fmt in FORMATS}
    args = [a for fmt, p in files.items() for a in ("--output", f"{fmt}:{p}")]
    r = cli("scan", "--root", str(root), "--offline", *args)
    assert r.code == 1, r.err  # the fixture fails a medium rule
    assert r.out == "", "with --output only, nothing goes to stdout"
    assert tree(root) == before, "aiaudit wrote under the scanned root"
    return out, files


def test_every_format_written_from_one_scan(saved) -> None:
    _out, files = saved
    for fmt, path in files.items():
        assert path.is_file() and path.stat().st_size > 0, fmt
    report = json.loads(files["json"].read_text())
    run_id = report["run_id"]
    for fmt in ("sarif", "junit", "events"):
        assert run_id in files[fmt].read_text(), f"{fmt} is from another run"
    # Prometheus keeps ids out of labels: the scan's start time says which run it is
    from datetime import datetime

    start = datetime.fromisoformat(report["started"].replace("Z", "+00:00")).timestamp()
    assert f'aiaudit_scan_timestamp_seconds{{ruleset="{report["ruleset"]["name"]}"}} ' \
        f"{float(start)!r}" in files["prometheus"].read_text()


@pytest.mark.parametrize("fmt", FORMATS)
def test_render_reproduces_every_format(saved, fmt: str, tmp_path: Path) -> None:
    """The JSON report is lossless: rendering it again gives the scan's own output."""
    _out, files = saved
    dest = tmp_path / f"again.{fmt}"
    r = cli("render", str(files["json"]), "--output", f"{fmt}:{dest}")
    assert r.code == 0, r.err
    assert dest.read_text() == files[fmt].read_text()


def test_render_to_stdout_with_format(saved) -> None:
    _out, files = saved
    r = cli("render", str(files["json"]), "--format", "sarif")
    assert r.code == 0, r.err
    assert json.loads(r.out)["version"] == "2.1.0"


@pytest.mark.parametrize("content, why", [
    ("{not json", "not a JSON report"),
    ('{"schema_version": "1.0"}', "not a valid aiaudit JSON report"),
    ("[]", "not a valid aiaudit JSON report"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_render_bad_input(tmp_path: Path, content, why: str) -> None:
    p = tmp_path / "bad.json"
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    r = cli("render", str(p), "--format", "sarif")
    assert r.code == 2
    assert r.out == ""
    assert r.err.count("\n") == 1 and why in r.err, r.err


def test_render_invalid_result_is_rejected(saved, tmp_path: Path) -> None:
    _out, files = saved
    doc = json.loads(files["json"].read_text())
    doc["results"][0]["status"] = "bogus"
    p = tmp_path / "edited.json"
    p.write_text(json.dumps(doc))
    r = cli("render", str(p), "--format", "junit")
    assert r.code == 2 and "results/0/status" in r.err


def test_render_missing_file_and_unknown_format(tmp_path: Path, saved) -> None:
    r = cli("render", str(tmp_path / "nope.json"))
    assert r.code == 2 and "cannot read report" in r.err
    r = cli("render", str(saved[1]["json"]), "--format", "nope")
    assert r.code == 2 and "unknown format" in r.err
    r = cli("render", str(tmp_path))
    assert r.code == 2 and "not a regular file" in r.err


def test_output_write_error_is_one_message(tmp_path: Path) -> None:
    r = cli("scan", "--root", str(FIXTURE_ROOT), "--offline",
            "--output", f"sarif:{tmp_path}/no/such/dir/x.sarif")
    assert r.code == 2 and r.err.startswith("aiaudit: error: cannot write")
    assert not os.path.exists(tmp_path / "no")


def test_undecodable_file_name_does_not_break_any_output(tmp_path: Path) -> None:
    """A config file whose name is not UTF-8 reaches evidence as a surrogate escape;
    every format is still written, as valid UTF-8."""
    root = tmp_path / "root"
    d = root / "etc" / "sysctl.d"
    d.mkdir(parents=True)
    (d / os.fsdecode(b"\xff-bad.conf")).write_text("vm.swappiness = 90\n")
    ext = {n: r.extension for n, r in plugins.registry().reporters.items()}
    files = {fmt: tmp_path / f"scan.{ext[fmt]}" for fmt in FORMATS}
    args = [a for fmt, p in files.items() for a in ("--output", f"{fmt}:{p}")]
    r = cli("scan", "--root", str(root), "--offline", "--only", "SYSCTL-VM-SWAPPINESS", *args)
    assert r.code == 1, r.err
    texts = {fmt: p.read_bytes().decode("utf-8") for fmt, p in files.items()}
    for fmt in ("json", "sarif", "events"):
        assert "\ufffd-bad.conf" in texts[fmt], fmt
    for fmt in ("junit", "text"):  # XML cannot hold it, a terminal must not get it: escaped
        assert "\\udcff-bad.conf" in texts[fmt], fmt
    again = cli("render", str(files["json"]), "--format", "sarif")
    assert again.code == 0, again.err
