"""Which files the command line names: globs as ``glob.glob`` reads them, but ``**`` never
led in circles by symbolic links, walks bounded and without recursion, each file once."""

from __future__ import annotations

import glob
import itertools
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aiaudit.fleet import bounds, sources
from aiaudit.fleet.sources import InputProblem, expand_sources

TREE = ["r/a.json", "r/b.txt", "r/.h.json", "r/s/c.json", "r/s/t/d.json", "r/.hid/e.json",
        "x.json", "r2/f.json", "r2/s/g.jsonl"]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for p in TREE:
        Path(p).parent.mkdir(parents=True, exist_ok=True)
        Path(p).write_text("{}")
    return tmp_path


@pytest.mark.parametrize("pattern", ["r/*.json", "r/**/*.json", "**/*.json", "*.json", "r/*",
                                     "r/s/*/*.json", "r?/*.json", "**", "r/**/t/*",
                                     "r*/**/*.json*", "r/[ab].*", "nothing/**"])
def test_globs_match_as_glob_does(tree: Path, pattern: str) -> None:
    want = sorted(p.rstrip("/") for p in glob.glob(pattern, recursive=True))
    got = sorted(sources._glob(pattern, sources._Budget()))
    assert got == [w for w in want if w != pattern.split("/")[0]]  # glob adds "r/" for r/**
    absolute = sorted(sources._glob(str(tree / pattern), sources._Budget()))
    assert absolute == [str(tree / g) for g in got]


def test_symlink_loops_under_a_double_star_are_not_followed(tree: Path) -> None:
    os.symlink(".", "r/loop")
    os.symlink("..", "r/s/up")
    os.symlink("../../r", "r/s/t/back")
    got = list(expand_sources(["r/**/*.json"]))
    assert got == ["r/a.json", "r/s/c.json", "r/s/t/d.json"]
    # a pattern without ** enters a link as glob does: one level per component
    assert sorted(expand_sources(["r/*/*.json"])) == ["r/.hid/e.json", "r/s/c.json"] \
        or sorted(expand_sources(["r/*/*.json"])) == sorted(glob.glob("r/*/*.json"))


def test_a_directory_walk_does_not_follow_links_and_names_each_file_once(tree: Path) -> None:
    os.symlink(".", "r/loop")
    got = list(expand_sources(["r", "r/a.json", "r/**/*.json", "./r/a.json"]))
    assert got == ["r/a.json", "r/.hid/e.json", "r/s/c.json", "r/s/t/d.json"]


def test_a_deep_tree_needs_no_recursion(tree: Path) -> None:
    path = Path("deep")
    path.mkdir()
    for _ in range(1100):  # deeper than Python's recursion limit (os.makedirs recurses too)
        path = path / "d"
        path.mkdir()
    (path / "x.json").write_text("{}")
    try:
        assert list(expand_sources(["deep"])) == [str(path / "x.json")]
        assert list(expand_sources(["deep/**/*.json"])) == [str(path / "x.json")]
    finally:  # shutil.rmtree (pytest's clean-up) recurses too: take it down here
        (path / "x.json").unlink()
        while path != Path("."):
            path.rmdir()
            path = path.parent


def test_walks_are_bounded(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "MAX_WALK", 5)
    got = list(expand_sources(["r", "x.json"]))
    assert isinstance(got[-1], InputProblem) and "more than 5 directory entries" in str(got[-1])
    monkeypatch.setattr(bounds, "MAX_WALK", 1000)
    monkeypatch.setattr(bounds, "MAX_SOURCES", 2)
    got = list(expand_sources(["r"]))
    assert got[:2] == ["r/a.json", "r/.hid/e.json"]
    assert isinstance(got[2], InputProblem) and "more than 2 files" in str(got[2])


_names = st.sampled_from(["a", "b.json", ".h", "c.json", "s"])


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_names, min_size=1, max_size=3), max_size=8),
       st.lists(st.sampled_from(["*", "**", "?.json", "*.json", "s", ".h", "[ab]*"]),
                min_size=1, max_size=3))
def test_any_tree_and_pattern_match_as_glob(tmp_path: Path, paths: list, parts: list) -> None:
    base = tmp_path / "t"
    for p in paths:
        target = base.joinpath(*p)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.write_text("{}")
        except (FileExistsError, NotADirectoryError):
            pass
    pattern = str(base.joinpath(*parts))
    fixed = list(itertools.takewhile(lambda p: not glob.has_magic(p), parts))
    # glob gives "t/s/" for a file t/s and the pattern t/**/s/** (not a directory: no match)
    # (and "**/**" gives each path several times)
    want = sorted({p.rstrip("/") for p in glob.glob(pattern, recursive=True)
                   if not p.endswith("/") or os.path.isdir(p)})
    got = sorted(sources._glob(pattern, sources._Budget()))
    # "DIR/**" also gives DIR itself (walked all the same); a pattern without magic is the
    # path itself
    top = str(base.joinpath(*fixed))
    assert got == [w for w in want if w != top or len(fixed) == len(parts)]
