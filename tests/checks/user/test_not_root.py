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


def test_directory_user_offline_is_could_not_look(make_root) -> None:
    """An image whose users come from sssd: a user not in its files is an error naming
    the sources (the other training-user rules say the same), never a skip."""
    rt = make_root({**DEBIAN, "/etc/nsswitch.conf": "passwd: files sss\ngroup: files sss\n"})
    for check in ("user.not_root", "accounts.privileged_groups", "accounts.sudo_nopasswd",
                  "limits.effective"):
        params = {"item": "memlock", "type": "soft"} if check == "limits.effective" else None
        r = one(run_check(check, rt, params, user="ldapuser"))
        assert r.status is Status.ERROR, (check, r)
        assert r.message.startswith("could not look: training user ldapuser"), r.message
    r = one(run_check("user.not_root", rt, user="alice"))  # a user of the files: decided
    assert r.status is Status.PASS and r.evidence[0].source == "etc/passwd:2"
