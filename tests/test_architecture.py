"""The layout keeps showing the design: imports go down the layers only, without circles;
no check imports another; functions stay small enough to read.

The import graph is built from the source (every ``import`` statement, those inside
functions included), so a deferred import cannot hide a circle or a layer violation.

Layers, highest first (a module may import its own layer and the ones below)::

    cli
    modes | fleet          (independent of each other)
    reporters
    remediate | checks     (independent of each other)
    linux
    core                   (with aiaudit.api and aiaudit.hookspecs, the plugin surface)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"cli"}),
    frozenset({"modes", "fleet", "baseline"}),
    frozenset({"reporters"}),
    frozenset({"remediate", "checks"}),
    frozenset({"linux"}),
    frozenset({"core"}),
)
"""Highest first; the parts of one set may not import each other."""

TOP_LEVEL = {"api": "core", "hookspecs": "core", "__init__": "core", "__main__": "cli"}
"""Modules at the top of the package and the layer they belong to."""

MAX_LINES = 60
"""Longest function body (lines, docstring excluded) without a reason in its docstring."""
MAX_COMPLEXITY = 20
"""Highest cyclomatic complexity without a reason in its docstring."""
REASON = "Not split:"
"""A docstring paragraph starting with this says why a function is longer or more complex
than the limits (a state machine, a table of cases that reads best in one place)."""


def module_files() -> dict[str, Path]:
    """Every module of the package, by dotted name (``checks/`` is ``aiaudit.checks``)."""
    out: dict[str, Path] = {}
    trees = ((REPO / "aiaudit", ("aiaudit",)), (REPO / "checks", ("aiaudit", "checks")))
    for base, prefix in trees:
        for path in sorted(base.rglob("*.py")):
            parts = (*prefix, *path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


@cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (resolved to modules that exist)."""
    files = module_files()
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                deps.add(node.module)
                deps.update(f"{node.module}.{a.name}" for a in node.names)
        graph[name] = {d for d in deps if d in files and d != name}
    return graph


def layer_of(module: str) -> str:
    """The layer of a package module: its first component below ``aiaudit``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "core"
    return TOP_LEVEL.get(parts[1], parts[1])


def rank(layer: str) -> int:
    """Position of ``layer`` in :data:`LAYERS` (0 = highest)."""
    for i, members in enumerate(LAYERS):
        if layer in members:
            return i
    raise AssertionError(f"layer {layer!r} is in no layer of LAYERS: add it there")


def test_every_module_belongs_to_a_layer() -> None:
    for module in module_files():
        rank(layer_of(module))


def test_imports_go_down_the_layers_only() -> None:
    wrong = []
    for module, deps in import_graph().items():
        here = layer_of(module)
        for dep in deps:
            there = layer_of(dep)
            if here == there:
                continue
            if rank(there) <= rank(here):
                wrong.append(f"{module} ({here}) imports {dep} ({there})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_circles() -> None:
    graph = import_graph()
    # a package imports its own submodules' names through __init__ re-exports at most;
    # an edge from a package to its own submodule and back is still a circle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, circles


def test_no_check_imports_another_check() -> None:
    wrong = [f"{m} imports {d}" for m, deps in import_graph().items()
             if m.startswith("aiaudit.checks.") for d in deps if d.startswith("aiaudit.checks.")]
    assert not wrong, "\n".join(sorted(wrong))


def test_check_modules_are_leaves() -> None:
    """``checks/<area>/<name>.py`` registers check ``area.name`` (tests/core/test_plugins.py
    checks the ids); nothing else lives under checks/ but packages and data."""
    for path in module_files().values():
        rel = path.relative_to(REPO)
        if rel.parts[0] != "checks" or path.name == "__init__.py":
            continue
        assert len(rel.parts) == 3, f"{rel}: a check module is checks/<area>/<name>.py"
        assert not rel.stem.startswith("_"), f"{rel}: shared code goes to aiaudit/linux/"


# --------------------------------------------------------------------------- function size
def complexity(fn: ast.AST) -> int:
    """McCabe's cyclomatic complexity of a function, as mccabe and ruff's C901 count it:
    one, plus one per branch (``if``, ``elif``, loops, ``except``, conditional expressions,
    comprehension filters and loops, ``match`` cases) and per extra operand of ``and``/``or``.
    Nested functions and classes are counted on their own."""
    n = 1
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While,
                             ast.ExceptHandler, ast.match_case)):
            n += 1
        elif isinstance(node, ast.comprehension):
            n += 1 + len(node.ifs)
        elif isinstance(node, ast.BoolOp):
            n += len(node.values) - 1
        stack.extend(ast.iter_child_nodes(node))
    return n


def body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of a function from its ``def`` to its end, less its docstring."""
    total = (fn.end_lineno or fn.lineno) - fn.lineno + 1
    first = fn.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        total -= (first.end_lineno or first.lineno) - first.lineno + 1
    return total


def functions() -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(``path:line name``, node) of every function and method of the package."""
    for path in module_files().values():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{path.relative_to(REPO)}:{node.lineno} {node.name}", node


def test_functions_are_small_or_say_why() -> None:
    big = []
    for where, fn in functions():
        lines, cc = body_lines(fn), complexity(fn)
        if lines <= MAX_LINES and cc <= MAX_COMPLEXITY:
            continue
        doc = ast.get_docstring(fn) or ""
        if any(p.strip().startswith(REASON) for p in doc.split("\n\n")):
            continue
        big.append(f"{where}: {lines} lines, complexity {cc}")
    assert not big, (f"{len(big)} functions above {MAX_LINES} lines or complexity "
                     f"{MAX_COMPLEXITY} without a '{REASON}' paragraph in the docstring:\n"
                     + "\n".join(big))


@pytest.mark.parametrize(("source", "expected"), [
    ("def f():\n    return 1\n", 1),
    ("def f(a):\n    if a and b or c:\n        pass\n    elif d:\n        pass\n", 5),
    ("def f(x):\n    for i in x:\n        try:\n            pass\n        except E:\n"
     "            pass\n    return [y for y in x if y]\n", 5),
    ("def f(x):\n    def g():\n        if x:\n            pass\n    return g\n", 1),
])
def test_complexity_counts_like_mccabe(source: str, expected: int) -> None:
    fn = ast.parse(source).body[0]
    assert complexity(fn) == expected


# --------------------------------------------------------------------------- the tree
def test_every_module_imports_on_its_own() -> None:
    """``python -c "import M"`` works for every module.  One child process imports them
    one after another, forgetting every ``aiaudit`` module between two, so an import that
    only works because an earlier module ran first is still caught."""
    import subprocess
    import sys

    names = [m for m in module_files() if not m.endswith("__main__")]
    code = ("import importlib, sys\n"
            "bad = []\n"
            "for name in sys.argv[1:]:\n"
            "    before = set(sys.modules)\n"
            "    try:\n"
            "        importlib.import_module(name)\n"
            "    except Exception as exc:\n"
            "        bad.append(f'{name}: {type(exc).__name__}: {exc}')\n"
            "    for m in set(sys.modules) - before:\n"
            "        if m.startswith('aiaudit'):\n"
            "            del sys.modules[m]\n"
            "print('\\n'.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code, *names], capture_output=True,
                         text=True, timeout=600, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", out.stdout


def test_no_binary_is_committed_outside_the_fixtures() -> None:
    """A wheel or other binary at the top of the repository (an orjson wheel once was) is
    not source: only test fixtures may hold binary files."""
    import subprocess

    out = subprocess.run(["git", "ls-files", "-z"], capture_output=True, cwd=REPO,
                         check=False)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    binary = []
    for name in out.stdout.decode().split("\0"):
        if not name or name.startswith("tests/fixtures/"):
            continue
        path = REPO / name
        if name.endswith((".whl", ".egg", ".so", ".pyc", ".tar.gz", ".zip")):
            binary.append(name)
        elif path.is_file() and not path.is_symlink() and b"\0" in path.read_bytes()[:8192]:
            binary.append(name)
    assert not binary, binary
