"""A throw-away network namespace for tests that load real firewall rules: created with
``unshare --net=FILE`` (kept alive by a bind mount on FILE) and entered with
``nsenter --net=FILE`` (util-linux, installed by ``.ci/run``); root only."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from typing import Iterator

import pytest


def require(*programs: str) -> None:
    """Skip (locally) or fail (in CI) unless root and ``programs`` are available."""
    missing = [p for p in programs if shutil.which(p) is None]
    why = None
    if os.geteuid() != 0:
        why = "needs root (network namespaces)"
    elif missing:
        why = f"needs {', '.join(missing)}"
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"{why}: CI must run this test")
        pytest.skip(why)


@contextmanager
def netns(tag: str) -> Iterator[str]:
    """Create a network namespace pinned at a temporary file; yield the file's path;
    unmount and remove it afterwards."""
    require("unshare", "nsenter", "nft")
    tmp = tempfile.mkdtemp(prefix=f"aiaudit-{tag}-")
    pin = os.path.join(tmp, "net")
    open(pin, "w").close()
    try:
        subprocess.run(["unshare", f"--net={pin}", "true"], check=True, capture_output=True)
        yield pin
    finally:
        subprocess.run(["umount", pin], check=False, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def run_in(ns: str, *argv: str, stdin: str | None = None) -> str:
    """Run ``argv`` inside the namespace pinned at ``ns``; its stdout (raises on failure)."""
    res = subprocess.run(["nsenter", f"--net={ns}", *argv], input=stdin, text=True,
                         capture_output=True, timeout=60)
    if res.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed: {res.stderr}")
    return res.stdout
