"""``lazy_pattern``: parsers compile their expressions on first use, not at import."""

from __future__ import annotations

import re

from aiaudit.core.startup import lazy_pattern


def test_compiled_once_on_first_use(monkeypatch) -> None:
    calls: list[str] = []
    real = re.compile
    monkeypatch.setattr(re, "compile", lambda p, f=0: calls.append(p) or real(p, f))
    rx = lazy_pattern(r"a(\d+)", re.I)
    assert calls == []  # nothing at definition (import) time
    assert rx().match("A12").group(1) == "12"  # flags kept
    assert rx() is rx() and calls == [r"a(\d+)"]


def test_parser_modules_compile_nothing_at_import() -> None:
    import subprocess
    import sys

    code = ("import re, sys; calls = []; real = re.compile\n"
            "def spy(p, f=0):\n"
            "    calls.append(sys._getframe(1).f_globals.get('__name__', ''))\n"
            "    return real(p, f)\n"
            "re.compile = spy\n"
            "import aiaudit.linux.boot.loaders, aiaudit.linux.gpu.nvidia\n"
            "import aiaudit.linux.tuned.conf\n"
            "import aiaudit.linux.pyenv, aiaudit.linux.gpu.cuda\n"
            "print([c for c in calls if c.startswith('aiaudit.core.parsing')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
