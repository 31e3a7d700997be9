"""The ``json`` reporter's two forms: compact for files and pipes, indented on a terminal or
with ``--pretty``; ``aiaudit render`` writes the very bytes the scan wrote, in each form."""

from __future__ import annotations

import io
import json
import os
import shutil
from contextlib import redirect_stdout
from pathlib import Path

from aiaudit.reporters.json import render
from tests.helpers import FIXTURES, cli
from tests.reporters.samples import SAMPLES
from tests.reporters.scans import FIXTURE_ROOT

PRETTY_GOLDEN = FIXTURES / "golden" / "json" / "mixed.pretty.json"


def test_pretty_golden_and_same_document_as_compact() -> None:
    run = SAMPLES["mixed"]()
    pretty = render(run, {"pretty": True})
    if os.environ.get("AIAUDIT_REGEN_GOLDEN"):
        PRETTY_GOLDEN.write_text(pretty, encoding="utf-8")
    assert pretty == PRETTY_GOLDEN.read_text(encoding="utf-8")
    compact = render(run, {})
    assert compact.count("\n") == 1 and compact.endswith("}\n")
    assert json.loads(compact) == json.loads(pretty)
    assert compact == json.dumps(json.loads(pretty), separators=(",", ":"),
                                 ensure_ascii=False) + "\n"
    assert pretty == json.dumps(json.loads(compact), indent=2, ensure_ascii=False) + "\n"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_compact_to_pipes_and_files_pretty_on_a_terminal_or_asked(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root, symlinks=True)
    f = tmp_path / "scan.json"
    r = cli("scan", "--root", str(root), "--offline", "--format", "json")
    assert r.out.count("\n") == 1 and r.out.startswith('{"schema_version":')  # a pipe
    cli("scan", "--root", str(root), "--offline", "-o", f"json:{f}")
    assert f.read_text().count("\n") == 1
    pf = tmp_path / "pretty.json"
    r = cli("scan", "--root", str(root), "--offline", "-o", f"json:{pf}", "--pretty")
    assert pf.read_text().startswith('{\n  "')
    # render writes what the scan wrote, byte for byte, in either form
    for saved, extra in ((f, ()), (pf, ("--pretty",))):
        again = tmp_path / "again.json"
        r = cli("render", str(saved), "--output", f"json:{again}", *extra)
        assert r.code == 0, r.err
        assert again.read_bytes() == saved.read_bytes()
    # a terminal gets the indented form (and only stdout: the file stays compact)
    term = _Terminal()
    from aiaudit.cli import main

    with redirect_stdout(term):
        main(["render", str(f), "--format", "json"])
        main(["render", str(f), "-o", f"json:{tmp_path / 'c.json'}"])
    assert term.getvalue() == render_pretty(f)
    assert (tmp_path / "c.json").read_bytes() == f.read_bytes()


def render_pretty(saved: Path) -> str:
    """The indented form of a saved compact report."""
    return json.dumps(json.loads(saved.read_text()), indent=2, ensure_ascii=False) + "\n"
