"""A throw-away network namespace for tests that load real firewall rules (root, ip, nft)."""

from __future__ import annotations

import os
import shutil
import subprocess
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
    """Create ``aiaudit-<tag>-<pid>``, yield its name, delete it afterwards."""
    require("ip", "nft")
    name = f"aiaudit-{tag}-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def run_in(ns: str, *argv: str, stdin: str | None = None) -> str:
    """Run ``argv`` inside namespace ``ns``; its stdout (raises on failure)."""
    res = subprocess.run(["ip", "netns", "exec", ns, *argv], input=stdin, text=True,
                         capture_output=True, timeout=60)
    if res.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed: {res.stderr}")
    return res.stdout
