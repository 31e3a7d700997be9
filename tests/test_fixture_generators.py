"""The fixture generators reproduce the committed roots: a root edited by hand (or a
generator changed without regenerating) is caught here, so the generator stays the source
of truth for the roots it writes.

Each generator (``tests/fixtures/make_*.py``) is run into a temporary folder; every root it
writes must equal, file for file (content, symlink target), the root of that name under
``tests/fixtures/roots``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, ROOTS

GENERATORS = sorted(FIXTURES.glob("make_*.py"))


def tree(base: Path) -> dict[str, tuple[str, bytes | str]]:
    """Relative path -> (kind, content): file bytes or link target.  Folders are not
    compared: git keeps no empty folder, so a generator may make one a clone lacks."""
    out: dict[str, tuple[str, bytes | str]] = {}
    for folder, dirs, files in os.walk(base):
        here = Path(folder)
        for name in dirs:
            p = here / name
            if p.is_symlink():
                out[str(p.relative_to(base))] = ("link", os.readlink(p))
        for name in files:
            p = here / name
            rel = str(p.relative_to(base))
            out[rel] = ("link", os.readlink(p)) if p.is_symlink() else ("file", p.read_bytes())
    return out


def test_there_are_generators() -> None:
    assert {g.name for g in GENERATORS} >= {"make_gpu_node_roots.py", "make_tuning_roots.py"}


@pytest.mark.parametrize("generator", GENERATORS, ids=lambda p: p.name)
def test_generator_reproduces_the_committed_roots(generator: Path, tmp_path: Path) -> None:
    out = tmp_path / "roots"
    out.mkdir()
    proc = subprocess.run([sys.executable, str(generator), str(out)], capture_output=True,
                          text=True, timeout=300, cwd=FIXTURES.parent.parent)
    assert proc.returncode == 0, proc.stderr
    made = sorted(p.name for p in out.iterdir())
    assert made, f"{generator.name} wrote no root"
    for name in made:
        committed = ROOTS / name
        assert committed.is_dir(), f"{generator.name} writes {name}, which is not committed"
        want, got = tree(committed), tree(out / name)
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        differ = sorted(k for k in set(want) & set(got) if want[k] != got[k])
        assert not (missing or extra or differ), (
            f"{name}: regenerate with `python {generator.relative_to(FIXTURES.parent.parent)} "
            f"tests/fixtures/roots` and commit; missing {missing[:5]}, extra {extra[:5]}, "
            f"different {differ[:5]}")
