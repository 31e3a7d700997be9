"""Debian version order (:func:`aiaudit.linux.packages.dpkg.version_key`) against
``dpkg --compare-versions``, the oracle."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiaudit.linux.packages.dpkg import version_key

VERSIONS = ["1.0", "1.0-1", "1:0.9", "1.0~rc1", "1.0+deb12u1", "1.0-1~bpo1", "1.0.0",
            "2.36-9+deb12u4", "2.36-9+deb12u10", "3.0.11-1~deb12u2", "0", "1.0a", "1.0-0ubuntu1"]


def _dpkg_lt(a: str, b: str) -> bool:
    return subprocess.run(["dpkg", "--compare-versions", a, "lt", b],
                          check=False).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dpkg") is None and not os.environ.get("CI"),
                    reason="needs dpkg (the oracle)")
def test_version_order_matches_dpkg() -> None:
    wrong = [(a, b) for a in VERSIONS for b in VERSIONS
             if (version_key(a) < version_key(b)) != _dpkg_lt(a, b)]
    assert not wrong


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("dpkg") is None and not os.environ.get("CI"),
                    reason="needs dpkg (the oracle)")
@settings(max_examples=40, deadline=None)
@given(st.from_regex(r"[0-9]{1,3}(\.[0-9a-z~+]{1,4}){0,3}(-[0-9a-z.~+]{1,6})?", fullmatch=True),
       st.from_regex(r"[0-9]{1,3}(\.[0-9a-z~+]{1,4}){0,3}(-[0-9a-z.~+]{1,6})?", fullmatch=True))
def test_random_versions_match_dpkg(a: str, b: str) -> None:
    assert (version_key(a) < version_key(b)) == _dpkg_lt(a, b)
