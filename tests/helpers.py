"""Test helpers: fixture roots built on the fly, check runners, an in-process CLI runner."""

from __future__ import annotations

import io
import os
import shutil
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from aiaudit.api import CheckContext
from aiaudit.core import plugins
from aiaudit.core.host import Host
from aiaudit.core.model import Result

TESTS = Path(__file__).parent
FIXTURES = TESTS / "fixtures"
ROOTS = FIXTURES / "roots"
SHARED = TESTS.parent.parent / "shared"
"""``../shared`` next to the checkout (reference schemas); tests vendor what they need."""


def build_root(base: Path, files: Mapping[str, str | bytes] = (),  # type: ignore[assignment]
               links: Mapping[str, str] = (), dirs: tuple[str, ...] = ()) -> Path:  # type: ignore[assignment]
    """Create a fixture root under ``base``: ``files`` maps host paths to content,
    ``links`` maps host paths to symlink targets (verbatim), ``dirs`` are empty dirs."""
    base.mkdir(parents=True, exist_ok=True)
    for path, content in dict(files).items():
        p = base / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    for path, target in dict(links).items():
        p = base / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, p)
    for d in dirs:
        (base / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
    return base


def run_check(check_id: str, root: str | Path, params: Mapping[str, Any] | None = None, *,
              live: bool = False, user: str | None = None,
              settings: Mapping[str, Any] | None = None) -> list[Result]:
    """Run one registered check against a fixture root; exceptions propagate."""
    from aiaudit.core.ruleset import _with_defaults

    spec = plugins.registry().checks[check_id]
    host = Host(str(root), live=live)
    ctx = CheckContext(host=host, params=_with_defaults(dict(params or {}), spec.params_schema),
                       rule_id="TEST", user=user, settings=dict(settings or {}))
    return list(spec.run(ctx))


@dataclass
class CliResult:
    """Outcome of one in-process CLI call."""

    code: int
    out: str
    err: str


def cli(*args: str, env: Mapping[str, str] | None = None) -> CliResult:
    """Run ``aiaudit ARGS`` in-process and capture output and exit code."""
    from aiaudit.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse
                code = int(exc.code or 0)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return CliResult(code, out.getvalue(), err.getvalue())


def python() -> str:
    """The interpreter running the tests."""
    return sys.executable


_SCRIPT = shutil.which("aiaudit", path=os.path.dirname(sys.executable))
AIAUDIT_SCRIPT = Path(_SCRIPT or os.path.join(os.path.dirname(sys.executable), "aiaudit"))
"""The ``aiaudit`` console script installed next to the interpreter running the tests,
found from ``sys.executable`` (never a hard-coded ``.venv``): the one program a test hands
to a script that runs it (a prolog, a playbook).  Where it is not installed the path does
not exist, and such a test skips."""
AIAUDIT_CMD: list[str] = [_SCRIPT] if _SCRIPT else [sys.executable, "-m", "aiaudit"]
"""The command line that runs ``aiaudit`` in a child process: the console script, else the
module under the same interpreter."""


class CpuTime:
    """CPU seconds (user + system) spent inside a ``with`` block by this process (all its
    threads) and the child processes it waited for: what a test that bounds cost compares.
    Wall time on a shared machine is noise (a test failed at 12.7 s against 10 s under
    load); only a deadline test measures wall time, with a generous bound.

    ::

        with CpuTime() as t:
            work()
        assert t.seconds < 2
    """

    seconds: float = 0.0

    @staticmethod
    def _now() -> float:
        import resource

        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    def __enter__(self) -> CpuTime:
        self._start = self._now()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = self._now() - self._start
