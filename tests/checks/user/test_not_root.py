"""user.not_root on fixture roots and through the CLI."""

from __future__ import annotations

from aiaudit.core.model import Status
from tests.checks.limits.roots import (
    DEBIAN,
    one,
)
from tests.helpers import run_check


def test_not_root(make_root) -> None:
    rt = make_root(DEBIAN)
    r = one(run_check("user.not_root", rt, user="root"))
    assert r.status is Status.FAIL and r.remediation is not None
    assert one(run_check("user.not_root", rt, user="alice")).status is Status.PASS
    assert one(run_check("user.not_root", rt)).status is Status.SKIP


def test_user_from_slurm_job_user_via_cli() -> None:
    from tests.helpers import ROOTS, cli

    root = str(ROOTS / "limits-debian-root-star" / "root")
    res = cli("scan", "--ruleset", "dl-training", "--root", root, "--only",
              "TRAINING-USER-NOT-ROOT", env={"SLURM_JOB_USER": "root"})
    assert res.code == 1 and "from $SLURM_JOB_USER" in res.out, res.out + res.err
    res = cli("scan", "--ruleset", "dl-training", "--root", root, "--only",
              "LIMITS-NOFILE-SOFT")
    assert "--user NAME" in res.out
