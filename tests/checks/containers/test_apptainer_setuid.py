"""``containers.apptainer_setuid``: allow setuid with a setuid-root starter."""

from __future__ import annotations

import os
import stat

import pytest

from aiaudit.core.model import Status
from tests.helpers import run_check


@pytest.mark.skipif(os.geteuid() != 0, reason="a setuid-root file needs root to create")
def test_apptainer_setuid(make_root) -> None:
    root = make_root({"/etc/apptainer/apptainer.conf": "allow setuid = yes\n",
                      "/usr/libexec/apptainer/bin/starter-suid": "\x7fELF"})
    starter = root / "usr/libexec/apptainer/bin/starter-suid"
    [r] = run_check("containers.apptainer_setuid", root)
    assert r.status is Status.PASS  # not setuid: unprivileged mode
    os.chmod(starter, 0o4755)
    assert starter.stat().st_mode & stat.S_ISUID
    [r] = run_check("containers.apptainer_setuid", root)
    assert r.status is Status.FAIL
    (root / "etc/apptainer/apptainer.conf").write_text("allow setuid = no\n")
    [r] = run_check("containers.apptainer_setuid", root)
    assert r.status is Status.PASS
