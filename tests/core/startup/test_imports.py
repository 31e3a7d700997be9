"""The layout finder of aiaudit's own modules: it finds what the path finder would find,
reads a cache file only when it is valid for the source, and leaves everything else to the
standard machinery."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiaudit.core.startup import imports
from aiaudit.core.startup.imports import AiauditFinder, _Loader


def test_it_is_installed_and_loads_the_package() -> None:
    assert AiauditFinder in sys.meta_path
    out = subprocess.run(
        [sys.executable, "-c",
         "import sys, aiaudit.core.model, aiaudit.cli.scan, aiaudit.checks.kernel.sysctl\n"
         "for m in ('aiaudit.core.model', 'aiaudit.cli.scan', 'aiaudit.checks.kernel.sysctl',"
         " 'aiaudit.checks.kernel'):\n"
         "    print(type(sys.modules[m].__spec__.loader).__name__)\n"],
        capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.split() == ["_Loader"] * 4


def test_it_finds_what_the_path_finder_finds() -> None:
    import importlib
    from importlib.machinery import PathFinder

    for name in ("aiaudit.linux.sysfs", "aiaudit.linux.gpu", "aiaudit.linux.gpu.stack"):
        parent = importlib.import_module(name.rpartition(".")[0])
        ours = AiauditFinder.find_spec(name, parent.__path__)
        theirs = PathFinder.find_spec(name, parent.__path__)
        assert ours is not None and theirs is not None
        assert (ours.origin, ours.submodule_search_locations) == \
            (theirs.origin, theirs.submodule_search_locations)


def test_it_answers_only_for_its_own_single_directory_packages(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("X = 1\n")
    assert AiauditFinder.find_spec("other.m", [str(tmp_path)]) is None
    assert AiauditFinder.find_spec("aiaudit.m", None) is None
    assert AiauditFinder.find_spec("aiaudit.m", [str(tmp_path), str(tmp_path)]) is None
    assert AiauditFinder.find_spec("aiaudit.nothing", [str(tmp_path)]) is None
    (tmp_path / "d.py").mkdir()  # a folder named like a module is not one
    assert AiauditFinder.find_spec("aiaudit.d", [str(tmp_path)]) is None
    spec = AiauditFinder.find_spec("aiaudit.m", [str(tmp_path)])
    assert spec is not None and spec.origin == str(tmp_path / "m.py")


def _module(tmp_path: Path, text: str) -> tuple[Path, Path]:
    src = tmp_path / "m.py"
    src.write_text(text)
    cache = Path(py_compile.compile(str(src), doraise=True,
                                    invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP))
    return src, cache


def test_a_valid_cache_file_is_read(tmp_path: Path) -> None:
    src, _ = _module(tmp_path, "X = 41 + 1\n")
    loader = _Loader("aiaudit.m", str(src))
    code = loader._cached_code()
    assert code is not None and code.co_filename == str(src)
    ns: dict[str, object] = {}
    exec(code, ns)
    assert ns["X"] == 42


def test_a_stale_or_foreign_cache_file_is_left_to_the_standard_loader(tmp_path: Path) -> None:
    src, cache = _module(tmp_path, "X = 1\n")
    src.write_text("X = 22\n")  # another size: the cache is stale
    later = time.time() + 5
    os.utime(src, (later, later))
    loader = _Loader("aiaudit.m", str(src))
    assert loader._cached_code() is None
    code = loader.get_code("aiaudit.m")  # the standard loader recompiles
    ns: dict[str, object] = {}
    exec(code, ns)  # type: ignore[arg-type]
    assert ns["X"] == 22
    # a hash-based cache file (flags != 0) is the standard loader's to check
    src.write_text("X = 3\n")
    py_compile.compile(str(src), cfile=str(cache), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    assert _Loader("aiaudit.m", str(src))._cached_code() is None
    cache.write_bytes(b"garbage")
    assert _Loader("aiaudit.m", str(src))._cached_code() is None


@pytest.mark.parametrize("env", [{"PYTHONPYCACHEPREFIX": "/nonexistent-prefix"},
                                 {"PYTHONOPTIMIZE": "1"}])
def test_other_cache_settings_fall_back_and_still_import(env: dict[str, str]) -> None:
    out = subprocess.run([sys.executable, "-c", "import aiaudit.core.scan; print('ok')"],
                         capture_output=True, text=True, env={**os.environ, **env}, cwd="/")
    assert out.stdout.strip() == "ok", out.stderr


def test_install_is_idempotent() -> None:
    before = sys.meta_path.count(AiauditFinder)
    imports.install()
    assert sys.meta_path.count(AiauditFinder) == before == 1


def test_a_folder_is_listed_again_when_it_changes(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("A = 1\n")
    assert AiauditFinder.find_spec("aiaudit.b", [str(tmp_path)]) is None  # listed: no b
    (tmp_path / "b.py").write_text("B = 2\n")
    past = time.time() + 5  # another modification time, whatever the clock's resolution
    os.utime(tmp_path, (past, past))
    spec = AiauditFinder.find_spec("aiaudit.b", [str(tmp_path)])
    assert spec is not None and spec.origin == str(tmp_path / "b.py")
    # the spec names the ordinary cache file, as the path finder's would
    assert spec.cached == str(tmp_path / "__pycache__" /
                              f"b.{sys.implementation.cache_tag}.pyc")


def test_a_package_is_found_before_a_module_of_its_name(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "__init__.py").write_text("")
    (tmp_path / "p.py").write_text("")
    spec = AiauditFinder.find_spec("aiaudit.p", [str(tmp_path)])
    assert spec is not None and spec.origin == str(tmp_path / "p" / "__init__.py")
    assert spec.submodule_search_locations == [str(tmp_path / "p")]
    (tmp_path / "q").mkdir()  # a folder without __init__.py is not a package here
    (tmp_path / "q.py").write_text("")
    spec = AiauditFinder.find_spec("aiaudit.q", [str(tmp_path)])
    assert spec is not None and spec.origin == str(tmp_path / "q.py")
