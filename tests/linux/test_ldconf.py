"""ld.so.conf parsing (and the loader directory order it gives, against ldconfig)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiaudit.core.host import Host
from aiaudit.linux import ldconf
from tests.helpers import build_root


def test_parse() -> None:
    text = ("# comment\ninclude /etc/ld.so.conf.d/*.conf\n/usr/local/lib/  # trailing\n"
            "hwcap 0 nosegneg\ninclude\tlocal.d/*.conf other.conf\n\n")
    got = [(d.kind, d.value, d.line) for d in ldconf.parse(text, "/etc/ld.so.conf")]
    assert got == [("include", "/etc/ld.so.conf.d/*.conf", 2), ("dir", "/usr/local/lib", 3),
                   ("include", "/etc/local.d/*.conf", 5), ("include", "/etc/other.conf", 5)]


@given(st.text(max_size=300))
def test_any_text(text: str) -> None:
    for d in ldconf.parse(text):
        assert d.kind in ("dir", "include") and d.value.startswith("/")


@pytest.mark.oracle
def test_oracle_ldconfig_directory_order(tmp_path) -> None:
    """glibc's ``ldconfig -v`` scans the configured directories in the order we compute."""
    from aiaudit.linux.gpu.stack import loader_dirs

    exe = shutil.which("ldconfig") or shutil.which("/sbin/ldconfig")
    if exe is None or os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("ldconfig and root are needed in CI")
        pytest.skip("needs ldconfig and root")
    root = build_root(tmp_path / "r", {
        "/etc/ld.so.conf": "include /etc/ld.so.conf.d/*.conf\n/opt/first\n",
        "/etc/ld.so.conf.d/b.conf": "/opt/b\n",
        "/etc/ld.so.conf.d/a.conf": "/opt/a1\ninclude sub/*.conf\n/opt/a2\n",
        "/etc/ld.so.conf.d/sub/x.conf": "/opt/sub\n",
        "/etc/ld.so.conf.d/c.txt": "/opt/ignored\n",
    }, dirs=("/opt/first", "/opt/b", "/opt/a1", "/opt/a2", "/opt/sub", "/opt/ignored",
             "/var/cache/ldconfig"))
    out = subprocess.run([exe, "-v", "-N", "-X", "-r", str(root)], capture_output=True,
                         text=True, timeout=60)
    scanned = [line.split(":", 1)[0] for line in out.stdout.splitlines()
               if line.startswith("/") and "(from" in line]
    ours = [d for d in loader_dirs(Host(str(root), live=False)) if d.startswith("/opt/")]
    assert scanned[:len(ours)] == ours
    assert ours == ["/opt/a1", "/opt/sub", "/opt/a2", "/opt/b", "/opt/first"]
