"""The collector during a scan's loading: held off and then frozen only in aiaudit's own
process, never in a process that merely calls into aiaudit."""

from __future__ import annotations

import gc
import subprocess
import sys

from aiaudit.core.startup import collector


def test_a_process_that_calls_aiaudit_keeps_its_collector() -> None:
    frozen = gc.get_freeze_count()
    assert not collector._OWNED  # pytest calls main(), it never claims the process
    with collector.loading():
        assert gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_aiaudits_own_process_loads_without_collection_then_collects() -> None:
    code = (
        "import gc\n"
        "from aiaudit.core.startup import collector\n"
        "collector.own_process()\n"
        "before = gc.get_freeze_count()\n"
        "with collector.loading():\n"
        "    held = not gc.isenabled()\n"
        "    made = [[] for _ in range(1000)]\n"
        "print(held, gc.isenabled(), gc.get_freeze_count() > before + 1000)\n"
        "try:\n"  # an error while loading gives the collector back too
        "    with collector.loading():\n"
        "        raise KeyError\n"
        "except KeyError:\n"
        "    print(gc.isenabled())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd="/")
    assert out.stdout.split() == ["True", "True", "True", "True"]


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    code = ("import gc\nfrom aiaudit.core.startup import collector\n"
            "collector.own_process()\ngc.disable()\n"
            "with collector.loading():\n    pass\n"
            "print(gc.isenabled(), gc.get_freeze_count())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd="/")
    assert out.stdout.split() == ["False", "0"]


def test_the_console_entry_point_claims_the_process() -> None:
    code = ("import sys\nfrom aiaudit import cli\nfrom aiaudit.core.startup import collector\n"
            "cli.main = lambda: print(bool(collector._OWNED)) or 0\ncli.run()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd="/")
    assert out.stdout.strip() == "True", out.stderr


def test_garbage_an_import_leaves_is_not_frozen() -> None:
    code = (
        "import gc, weakref\n"
        "from aiaudit.core.startup import collector\n"
        "collector.own_process()\n"
        "class Node:\n    pass\n"
        "def garbage():\n"
        "    a, b = Node(), Node()\n    a.b, b.a = b, a\n    return weakref.ref(a)\n"
        "with collector.loading():\n"
        "    kept = garbage()\n"  # what an import drops without after_import: frozen
        "with collector.loading():\n"
        "    dropped = garbage()\n"
        "    collector.after_import('some.module')\n"
        "    collector.after_import('some.module')\n"  # once per module
        "gc.collect()\n"
        "print(kept() is not None, dropped() is None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd="/")
    assert out.stdout.split() == ["True", "True"]


def test_after_import_outside_loading_does_nothing() -> None:
    gc.disable()  # no collection of pytest's own between the two counts
    try:
        collected = gc.get_stats()[0]["collections"]
        collector.after_import("jsonschema")
        assert gc.get_stats()[0]["collections"] == collected
        assert "jsonschema" not in collector._COLLECTED
    finally:
        gc.enable()
