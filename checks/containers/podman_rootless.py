"""``containers.podman_rootless``: the training user can run podman without root.

What it checks: with podman installed, the training user has at least 65536 subordinate
uids and gids, so podman can map an image's users without running as root.

How it decides: the user's ranges (by name or uid) in ``/etc/subuid`` and ``/etc/subgid``
added up (:mod:`aiaudit.linux.containers.podman`); each total must reach 65536.

Sources: subuid(5), subgid(5); podman's "Basic Setup and Use of Podman in a Rootless
environment" tutorial.
"""

from __future__ import annotations

from typing import Iterator

from aiaudit.api import (
    CheckContext,
    CheckSpec,
    Evidence,
    Remediation,
    Result,
    Snippet,
    Status,
    hookimpl,
)
from aiaudit.linux.accounts.users import training_user
from aiaudit.linux.containers import podman
from aiaudit.linux.containers.podman import SUBIDS


def run(ctx: CheckContext) -> Iterator[Result]:
    """The training user can run rootless podman."""
    host = ctx.host
    if not podman.podman_installed(host):
        yield Result(Status.SKIP, "podman", "podman is not installed")
        return
    user, _acc, early = training_user(ctx)
    if early is not None:
        yield early
        return
    assert user is not None
    res = podman.subids(host, user.name, user.uid)
    ev = tuple(Evidence.file(f, ln) for f, (_, ln) in res.items() if ln)
    short = [f"{f.rsplit('/', 1)[1]}: {t}" for f, (t, _) in res.items() if t < SUBIDS]
    if short:
        yield Result(Status.FAIL, user.name, f"{user.name} has too few subordinate ids "
                     f"({', '.join(short)}; rootless podman needs {SUBIDS} to map an image's "
                     "users), so it would have to run podman as root",
                     expected=f">= {SUBIDS} each", actual=", ".join(short), evidence=ev,
                     remediation=Remediation("Give the user subordinate id ranges.", (
                         Snippet.command(f"usermod --add-subuids 100000-165535 --add-subgids "
                                         f"100000-165535 {user.name}",
                                         "add 65536 subuids and subgids"),)))
        return
    yield Result(Status.PASS, user.name, f"{user.name} has subuid/subgid ranges for rootless "
                 "podman", expected=f">= {SUBIDS} each",
                 actual=", ".join(str(t) for t, _ in res.values()), evidence=ev)


@hookimpl
def aiaudit_register_checks() -> list[CheckSpec]:
    """Register ``containers.podman_rootless``."""
    return [CheckSpec(
        id="containers.podman_rootless", title="The training user can run rootless podman",
        run=run, params_schema={"type": "object", "additionalProperties": False},
        description="With podman installed: /etc/subuid and /etc/subgid give the training user "
                    "(name or uid) at least 65536 ids each.")]
